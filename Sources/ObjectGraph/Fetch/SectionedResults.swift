/// A fetched results controller's results as NSFetchedResultsController keeps them: one array of objects in
/// order (with their sort keys, read when first needed, and section names) and the sections as an offset and a
/// count into it (Docs/coredata-behaviour.md §5, "What placing a change costs").
///
/// Each change is applied in place and counts the work it does: ``CostedOperation/controllerObjectMoved`` for
/// every entry it shifts, ``CostedOperation/controllerSectionUpdated`` for every section whose offset or count it
/// adjusts, or that it inserts or removes.
struct SectionedResults {
    /// A section: its name and where its objects are.
    struct Section {
        var name: String
        var offset: Int
        var count: Int
        /// Tells a section apart from one of the same name made later (a move's bookkeeping compares them).
        let id: Int
    }

    private(set) var objects: [ManagedObject]
    /// Sort keys by position, nil until read.
    var keys: [[PropertyValue]?]
    private(set) var names: [String]
    private(set) var sections: [Section] = []
    private var nextSectionID = 0

    /// The results of a fetch: `names` gives each object's section; a run of equal names is one section.
    init(objects: [ManagedObject], names: [String]) {
        self.objects = objects
        self.names = names
        keys = Array(repeating: nil, count: objects.count)
        for (i, name) in names.enumerated() {
            if let last = sections.last, last.name == name { sections[sections.count - 1].count += 1 } else {
                sections.append(makeSection(name, offset: i, count: 1))
            }
        }
    }

    var count: Int { objects.count }

    /// The index of the section holding position `p` (`0 ..< count`).
    func section(containing p: Int) -> Int {
        partitioningIndex(0, sections.count) { sections[$0].offset > p } - 1
    }

    /// Puts `object` at `p`: the entries from `p` on shift by one, its section counts one more (or is made), and
    /// every later section's offset moves.
    mutating func insert(_ object: ManagedObject, key: [PropertyValue]?, name: String, at p: Int) {
        Probe.count(.controllerObjectMoved, count - p)
        Probe.count(.controllerSectionUpdated, attach(name, at: p))
        objects.insert(object, at: p)
        keys.insert(key, at: p)
        names.insert(name, at: p)
    }

    /// Takes out the object at `p`: the entries after it shift by one, its section counts one fewer (or goes),
    /// and every later section's offset moves.
    mutating func remove(at p: Int) {
        Probe.count(.controllerObjectMoved, count - 1 - p)
        Probe.count(.controllerSectionUpdated, detach(at: p))
        objects.remove(at: p)
        keys.remove(at: p)
        names.remove(at: p)
    }

    /// Moves the object at `a` to `b` (its index afterwards) with its new key and section name: the |a − b|
    /// entries between shift by one. Within its section no section changes; across sections, the sections
    /// from the one it leaves to the one it joins are adjusted, and none after them.
    mutating func move(from a: Int, to b: Int, key: [PropertyValue], name: String) {
        let s = section(containing: a)
        if sections[s].name != name || b < sections[s].offset || b >= sections[s].offset + sections[s].count {
            let before = sections
            _ = detach(at: a)
            _ = attach(name, at: b)
            Probe.count(.controllerSectionUpdated, Self.changed(before, sections))
        }
        Probe.count(.controllerObjectMoved, abs(a - b))
        Self.shift(&objects, from: a, to: b)
        Self.shift(&keys, from: a, to: b)
        Self.shift(&names, from: a, to: b)
        keys[b] = key
        names[b] = name
    }

    // MARK: - Sections

    private mutating func makeSection(_ name: String, offset: Int, count: Int) -> Section {
        nextSectionID += 1
        return Section(name: name, offset: offset, count: count, id: nextSectionID)
    }

    /// Records an entry named `name` inserted at `p` (the entries from `p` on move up one); returns the sections
    /// touched. A name that falls inside another section's run (a section key that does not order like the sort)
    /// splits that section.
    private mutating func attach(_ name: String, at p: Int) -> Int {
        let left = p > 0 ? section(containing: p - 1) : -1
        if left >= 0, p < sections[left].offset + sections[left].count {
            let host = sections[left]
            if host.name == name {
                sections[left].count += 1
                return 1 + shiftOffsets(after: left, by: 1)
            }
            sections[left].count = p - host.offset
            sections.insert(makeSection(name, offset: p, count: 1), at: left + 1)
            sections.insert(makeSection(host.name, offset: p + 1, count: host.offset + host.count - p), at: left + 2)
            return 3 + shiftOffsets(after: left + 2, by: 1)
        }
        if left >= 0, sections[left].name == name {
            sections[left].count += 1
            return 1 + shiftOffsets(after: left, by: 1)
        }
        let right = left + 1
        if right < sections.count, sections[right].name == name {
            sections[right].count += 1
            return 1 + shiftOffsets(after: right, by: 1)
        }
        sections.insert(makeSection(name, offset: p, count: 1), at: right)
        return 1 + shiftOffsets(after: right, by: 1)
    }

    /// Records the entry at `p` taken out (the entries after it move down one); returns the sections touched. A
    /// section left empty goes; two runs of one name it separated become one.
    private mutating func detach(at p: Int) -> Int {
        let s = section(containing: p)
        sections[s].count -= 1
        guard sections[s].count == 0 else { return 1 + shiftOffsets(after: s, by: -1) }
        sections.remove(at: s)
        if s > 0, s < sections.count, sections[s - 1].name == sections[s].name {
            sections[s - 1].count += sections[s].count
            sections.remove(at: s)
            return 3 + shiftOffsets(after: s - 1, by: -1)
        }
        return 1 + shiftOffsets(after: s - 1, by: -1)
    }

    /// Moves the offsets of the sections after `s` by `d`; returns how many (each one a section touched).
    private mutating func shiftOffsets(after s: Int, by d: Int) -> Int {
        guard s + 1 < sections.count else { return 0 }
        for i in s + 1 ..< sections.count { sections[i].offset += d }
        return sections.count - s - 1
    }

    /// The sections made, removed or adjusted between two layouts.
    private static func changed(_ before: [Section], _ after: [Section]) -> Int {
        var old: [Int: (Int, Int)] = [:]
        for s in before { old[s.id] = (s.offset, s.count) }
        var touched = 0
        for s in after {
            if let o = old.removeValue(forKey: s.id), o == (s.offset, s.count) { continue }
            touched += 1
        }
        return touched + old.count
    }

    /// Moves `array[a]` to `b`, shifting the |a − b| entries between by one (a memmove, not a remove and an insert).
    private static func shift<T>(_ array: inout [T], from a: Int, to b: Int) {
        guard a != b else { return }
        let moving = array[a]
        if a < b {
            for i in a ..< b { array[i] = array[i + 1] }
        } else {
            for i in stride(from: a, to: b, by: -1) { array[i] = array[i - 1] }
        }
        array[b] = moving
    }
}

/// The first index in `lo ..< hi` at which `isAbove` holds (`hi` when none does), for an `isAbove` that is false
/// up to some index and true from it on: a search by halves, probing `(lo + hi) / 2` each time, so that a
/// search that counts its probes (a controller's comparisons) counts about log2 of the range.
func partitioningIndex(_ lo: Int, _ hi: Int, where isAbove: (Int) -> Bool) -> Int {
    var lo = lo, hi = hi
    while lo < hi {
        let mid = (lo + hi) / 2
        if isAbove(mid) { hi = mid } else { lo = mid + 1 }
    }
    return lo
}
