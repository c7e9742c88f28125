import CObjectRuntime

/// A context's registry: one object per ID, held without keeping the object alive (semantics §2.1 step 8: a
/// registered object without changes lives only as long as the app holds it; the change sets hold the others).
///
/// Entries are unowned references, not Swift `weak` ones. A weak reference gives its object a side table, and
/// from then on every retain and release of the object, anywhere in the program, takes the runtime's slow path
/// (in an update of existing objects, about a tenth of all instructions), and a side table is allocated and freed
/// per object. An unowned reference is a second count in the object's inline reference-count word: the object is
/// deinitialized when its last strong reference goes, as with a weak one, but its memory stays allocated until the
/// entry goes too, so the entry can always be asked whether its object still lives. A lookup retains the object
/// only if it is not being deinitialized (`swift_tryRetain`, one compare-and-swap, what a weak load does too),
/// which is safe even when the app releases its last reference on another thread at the same moment. The cost is
/// memory: a freed object's bytes (not its arrays, which its deinit frees) stay until a sweep drops its entry, at
/// most ``ObjectRegistry/minimumSweepThreshold`` entries.
///
/// The registry is confined to its context's queue, like the rest of the context's state.
final class ObjectRegistry {
    /// An unowned reference (an address with one unowned count), or the position of a freed one.
    struct Entry {
        let address: UnsafeMutableRawPointer
    }
    typealias Index = Int

    @exclusivity(unchecked) private var table = IDTable<Entry>()
    @exclusivity(unchecked) private var sweepThreshold = ObjectRegistry.minimumSweepThreshold
    /// Entries of freed objects are swept once the registry reaches this size (or twice its live size): a
    /// sweep walks every entry and rehashes the live ones, so with an import's ~1,000 objects in flight a
    /// larger floor sweeps less often for the same freed entries (1.6k instructions per imported object at
    /// 1,024, 0.3k at 8,192; an entry costs ~24 bytes, and a freed object's memory ~200 until its entry goes).
    static let minimumSweepThreshold = 8192

    deinit {
        table.forEachSlot { ambar_unowned_release(table[slot: $0].address) }
    }

    /// Entries, live or not yet swept.
    var count: Int { table.count }

    /// The object registered for `id`, retained, if it is still alive.
    @inline(__always)
    subscript(id: ManagedObjectID) -> ManagedObject? {
        guard let entry = table[id] else { return nil }
        return Self.load(entry)
    }

    @inline(__always)
    private static func load(_ entry: Entry) -> ManagedObject? {
        guard let retained = ambar_try_retain(entry.address) else { return nil }
        return Unmanaged<ManagedObject>.fromOpaque(retained).takeRetainedValue()
    }

    @inline(__always)
    private static func isFreed(_ entry: Entry) -> Bool { ambar_is_deallocating(entry.address) }

    /// Registers `object` under its ID (replacing an entry of a freed object). Returns whether the registry has
    /// reached its sweep threshold.
    func insert(_ object: ManagedObject) -> Bool {
        let address = Unmanaged.passUnretained(object).toOpaque()
        ambar_unowned_retain(address)
        if let old = table.updateValue(Entry(address: address), forKey: object.objectID) {
            ambar_unowned_release(old.address)
        }
        return table.count > sweepThreshold
    }

    /// Forgets `id`'s entry.
    func remove(_ id: ManagedObjectID) {
        if let old = table.removeValue(forKey: id) { ambar_unowned_release(old.address) }
    }

    /// Drops the entries of `ids` whose objects were freed (an import's saved inserts: their memory goes now,
    /// not at the next sweep).
    func removeFreed<S: Sequence>(_ ids: S) where S.Element == ManagedObjectID {
        for id in ids {
            guard let index = table.index(forKey: id), Self.isFreed(table[slot: index]) else { continue }
            ambar_unowned_release(table[slot: index].address)
            table.remove(at: index)
        }
    }

    /// Moves an entry to a new key (a temporary ID replaced by a permanent one); returns its object if alive.
    func move(_ old: ManagedObjectID, to new: ManagedObjectID) -> ManagedObject? {
        guard let entry = table.removeValue(forKey: old) else { return nil }
        guard let object = Self.load(entry) else {
            ambar_unowned_release(entry.address)
            return nil
        }
        if let replaced = table.updateValue(entry, forKey: new) { ambar_unowned_release(replaced.address) }
        return object
    }

    /// Forgets every entry.
    func removeAll() {
        table.forEachSlot { ambar_unowned_release(table[slot: $0].address) }
        table.removeAll()
        sweepThreshold = Self.minimumSweepThreshold
    }

    /// The live objects, retained.
    func liveObjects() -> [ManagedObject] {
        var result: [ManagedObject] = []
        result.reserveCapacity(table.count)
        table.forEachSlot { if let object = Self.load(table[slot: $0]) { result.append(object) } }
        return result
    }

    /// Drops the entries of freed objects; with `reserving`, then grows room up to the next sweep, so a registry
    /// that reached the threshold does not grow (and rehash) step by step again. (Not when only counting: a
    /// context that is asked its count often would otherwise hold a table for 8,192 entries, 0.5 MiB, for nothing;
    /// that raised the chunked import's memory peak by 1.5 MiB when it was so.)
    func sweep(reserving: Bool) {
        dropFreedEntries()
        sweepThreshold = max(Self.minimumSweepThreshold, table.count * 2)
        if reserving { table.reserveCapacity(sweepThreshold + 1) }
    }

    /// Makes room for `count` more entries at once (a fetch about to register its objects): one sweep now if they
    /// would cross the threshold, then room for all of them and a threshold above them, instead of a sweep and a
    /// rehash at every doubling on the way (at 1,000,000 objects, seven sweeps walking 2M entries and rehashing
    /// 2M more, each entry a cache miss once the table outgrows the caches). The sweep's rule is the same: freed
    /// entries are dropped whenever the registry outgrows twice its live size, once ``finishInserting(prepared:)``
    /// has brought the threshold down to the entries the inserts really made. Returns whether it swept.
    @discardableResult
    func prepareForInserting(_ count: Int) -> Bool {
        guard count > 0, table.count + count > sweepThreshold else { return false }
        dropFreedEntries()
        let needed = table.count + count
        sweepThreshold = max(Self.minimumSweepThreshold, needed * 2)
        table.reserveCapacity(needed)
        return true
    }

    /// After the inserts a sweeping ``prepareForInserting(_:)`` (`prepared`) made room for: the threshold is twice
    /// the entries now, as a sweep sets it. The count given there is an upper bound (a fetch's objects that were
    /// registered already add no entry): a threshold left at twice the registered plus the fetched objects let freed
    /// entries, each keeping its object's memory, reach four times the live objects before the next sweep
    /// (semantics §2.1 step 8; RegistryThresholdTests).
    func finishInserting(prepared: Bool) {
        guard prepared else { return }
        sweepThreshold = max(Self.minimumSweepThreshold, table.count * 2)
    }

    /// The number of live entries (after a sweep).
    func liveCount() -> Int {
        sweep(reserving: false)
        return table.count
    }

    /// Registered live objects among `ids`, walking whichever of the two is smaller; `examined` counts the
    /// entries or IDs walked (semantics §3.1 cost model). Entries of objects already freed are dropped on the way
    /// when the registry is walked, so that the next merge walks only live objects (probing a large ID set is a
    /// cache miss per entry).
    func liveObjects(among ids: Set<ManagedObjectID>, examined: inout Int) -> [ManagedObject] {
        guard !ids.isEmpty else { return [] }
        var result: [ManagedObject] = []
        result.reserveCapacity(Swift.min(table.count, ids.count, 256))  // usually few match: a bounded start
        if table.count < ids.count {
            examined += table.count
            var freed: [Index] = []
            table.forEachSlot { index in
                let entry = table[slot: index]
                if Self.isFreed(entry) {
                    freed.append(index)
                } else if ids.contains(table.key(at: index)), let object = Self.load(entry) {
                    result.append(object)
                }
            }
            removeFreedEntries(at: freed)
        } else {
            examined += ids.count
            for id in ids {
                if let object = self[id] { result.append(object) }
            }
        }
        return result
    }

    /// Drops every entry whose object was freed: one check per entry (a read of the object's reference-count word),
    /// remembered by position.
    private func dropFreedEntries() {
        var freed: [Index] = []
        table.forEachSlot { if Self.isFreed(table[slot: $0]) { freed.append($0) } }
        removeFreedEntries(at: freed)
    }

    /// Drops the entries at `freed` (slots of entries whose objects are gone). When most are freed (an import's chunks
    /// come and go) the live ones are copied into a new table without checking them again; otherwise the freed ones are
    /// removed in place (a registry that only grew, a large fetch, is not rebuilt).
    private func removeFreedEntries(at freed: [Index]) {
        guard !freed.isEmpty else { return }
        for index in freed { ambar_unowned_release(table[slot: index].address) }
        if freed.count > table.count / 2 {
            // Sized for the live entries only: the old table is still allocated here (a full-size table now would
            // raise an import's memory peak by its size); a sweep reserves room once the old one is gone.
            let rebuilt = IDTable<Entry>(minimumCapacity: table.count - freed.count)
            var next = 0
            table.forEachSlot { index in
                if next < freed.count, freed[next] == index {
                    next += 1
                    return
                }
                rebuilt.updateValue(table[slot: index], forKey: table.key(at: index))
            }
            table = rebuilt
        } else {
            for index in freed { table.remove(at: index) }
        }
    }
}
