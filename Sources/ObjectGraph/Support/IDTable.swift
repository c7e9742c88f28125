import Synchronization

/// A hash table keyed by object ID that keeps a store's consecutive primary keys in consecutive slots: the row cache's
/// and each context's registry.
///
/// A fetch, a save and the release of a chunk's objects walk rows in key order. With every key hashed on its own
/// (Swift's `Dictionary`), each of those steps lands on a random slot: a cache miss, and a TLB miss once the table
/// outgrows the caches (at 1M rows, a fifth of a fetch's time goes to finding slots so). Here the slots form groups of
/// 16; a key's block of 16 consecutive keys is hashed to a group, and each key of the block has its own place in the
/// group (the key's low bits, turned by the block's hash so that keys 16 apart do not all want the same place). A walk
/// in key order reads the table in order.
///
/// A key whose place is taken looks at the same place in the next group, and so on: each place of a group is its own
/// linear-probing table, whose runs stay as short as for keys hashed one by one. (Probing slot by slot instead, the
/// blocks run into each other, and an insert walks a whole run of blocks to know its key is absent: 0.6k
/// instructions per insert at three quarters full.)
///
/// Removal leaves a marker in the slot (a lookup walks past it, an insert reuses it), where a table that closes the
/// gap at each removal (as `Dictionary` does) moves entries: with blocks, removing keys in order costs six times as
/// much at 20k entries. The markers go at the next rehash, or at once when the next slot of the probe is empty. A
/// rehash that markers bring keeps the size while the entries fill at most half of what may be filled, and doubles
/// it otherwise: a rebuild that freed only a few slots would come again a few changes later.
///
/// IDs are plain values (no reference counted), so their slots are never deinitialized.
///
/// Not thread-safe: the row cache uses it under its lock (hence `@unchecked Sendable`, which a `Mutex` requires of what
/// it guards), a registry on its context's queue.
final class IDTable<Value>: @unchecked Sendable {
    private static var empty: UInt8 { 0 }
    private static var full: UInt8 { 1 }
    private static var removed: UInt8 { 2 }

    private var control: UnsafeMutablePointer<UInt8>
    private var ids: UnsafeMutablePointer<ManagedObjectID>
    private var values: UnsafeMutablePointer<Value>
    /// Slots, a power of two.
    private(set) var capacity: Int
    /// Entries.
    private(set) var count = 0
    /// Slots holding a removal marker.
    private var markers = 0
    /// A seed per table, so that two tables do not share their clusters (as `Dictionary` seeds each).
    private let seed: Int

    init(minimumCapacity: Int = 0) {
        assert(_isPOD(ManagedObjectID.self), "IDTable never deinitializes IDs")
        capacity = Self.capacity(for: minimumCapacity)
        (control, ids, values) = Self.allocate(capacity)
        seed = IDTableSeed.next()
    }

    deinit {
        destroyEntries()
        control.deallocate()
        ids.deallocate()
        values.deallocate()
    }

    private static func allocate(_ capacity: Int) -> (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<ManagedObjectID>, UnsafeMutablePointer<Value>) {
        let control = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        control.initialize(repeating: empty, count: capacity)
        return (control, .allocate(capacity: capacity), .allocate(capacity: capacity))
    }

    /// Slots for `count` entries filling at most three quarters of them (as `Dictionary` fills its table); at least
    /// eight groups.
    private static func capacity(for count: Int) -> Int {
        var capacity = 128
        while capacity * 3 < count * 4 { capacity *= 2 }
        return capacity
    }

    private func destroyEntries() {
        for i in 0..<capacity where control[i] == Self.full { (values + i).deinitialize(count: 1) }
    }

    /// The first slot to look at for `id`: its block's group, and its place there.
    @inline(__always)
    private func home(_ id: ManagedObjectID) -> Int {
        let word = id.hashWord
        let block = wordHash(word >> 4, seed: seed)
        return ((block << 4) | ((Int(truncatingIfNeeded: word) &+ (block >> 60)) & 15)) & (capacity - 1)
    }

    /// The same place in the next group.
    @inline(__always)
    private func next(_ slot: Int) -> Int { (slot + 16) & (capacity - 1) }

    /// The slot holding `id`, if any.
    @inline(__always)
    func index(forKey id: ManagedObjectID) -> Int? {
        var i = home(id)
        for _ in 0..<(capacity >> 4) {
            switch control[i] {
            case Self.empty: return nil
            case Self.full where ids[i] == id: return i
            default: i = next(i)
            }
        }
        return nil
    }

    /// The entry for `id`, if any.
    subscript(id: ManagedObjectID) -> Value? {
        index(forKey: id).map { values[$0] }
    }

    /// The entry at `slot` (from ``index(forKey:)`` or ``forEachSlot(_:)``), read and changed in place.
    subscript(slot slot: Int) -> Value {
        get {
            assert(control[slot] == Self.full, "no entry at slot \(slot)")
            return values[slot]
        }
        _modify {
            assert(control[slot] == Self.full, "no entry at slot \(slot)")
            yield &values[slot]
        }
    }

    /// The ID at `slot`.
    func key(at slot: Int) -> ManagedObjectID { ids[slot] }

    /// The entry for `id`, made with `makeDefault` first when there is none, read and changed in place.
    subscript(id: ManagedObjectID, default makeDefault: @autoclosure () -> Value) -> Value {
        get { self[id] ?? makeDefault() }
        _modify {
            let slot = slot(for: id, makeDefault)
            yield &values[slot]
        }
    }

    /// The slot of `id`'s entry, inserted with `makeDefault()` when there is none.
    private func slot(for id: ManagedObjectID, _ makeDefault: () -> Value) -> Int {
        if (count + markers + 1) * 4 > capacity * 3 {
            // The same size while the entries fill at most half of the three quarters, else twice the slots.
            rehash(to: (count + 1) * 8 <= capacity * 3 ? capacity : capacity * 2)
        }
        while true {
            var i = home(id)
            var free = -1
            search: for _ in 0..<(capacity >> 4) {
                switch control[i] {
                case Self.empty:
                    if free < 0 { free = i }
                    break search
                case Self.full where ids[i] == id:
                    return i
                case Self.removed where free < 0:
                    free = i
                default:
                    break
                }
                i = next(i)
            }
            // Every group's place for this key is taken (a small table): grow and look again.
            guard free >= 0 else {
                rehash(to: capacity * 2)
                continue
            }
            (values + free).initialize(to: makeDefault())
            (ids + free).initialize(to: id)
            if control[free] == Self.removed { markers -= 1 }
            control[free] = Self.full
            count += 1
            return free
        }
    }

    /// Sets `id`'s entry; returns the one it replaced.
    @discardableResult
    func updateValue(_ value: Value, forKey id: ManagedObjectID) -> Value? {
        let before = count
        var replaced: Value?
        let slot = slot(for: id) { value }
        if count == before {
            replaced = values[slot]
            values[slot] = value
        }
        return replaced
    }

    /// Removes `id`'s entry; returns it.
    @discardableResult
    func removeValue(forKey id: ManagedObjectID) -> Value? {
        guard let slot = index(forKey: id) else { return nil }
        return remove(at: slot)
    }

    /// Removes the entry at `slot`; returns it. Other slots keep their entries (positions stay valid).
    @discardableResult
    func remove(at slot: Int) -> Value {
        assert(control[slot] == Self.full, "no entry at slot \(slot)")
        let value = (values + slot).move()
        count -= 1
        if control[next(slot)] == Self.empty {
            // Nothing probes past an empty slot: this slot and the markers just before it are free again.
            control[slot] = Self.empty
            var j = (slot - 16) & (capacity - 1)
            while control[j] == Self.removed {
                control[j] = Self.empty
                markers -= 1
                j = (j - 16) & (capacity - 1)
            }
        } else {
            control[slot] = Self.removed
            markers += 1
        }
        return value
    }

    /// Room for `count` entries without growing (markers may still bring a rehash at the same size).
    func reserveCapacity(_ count: Int) {
        let size = Self.capacity(for: count)
        if size > capacity { rehash(to: size) }
    }

    /// Removes every entry and gives back the slots.
    func removeAll() {
        destroyEntries()
        count = 0
        markers = 0
        control.deallocate()
        ids.deallocate()
        values.deallocate()
        capacity = Self.capacity(for: 0)
        (control, ids, values) = Self.allocate(capacity)
    }

    /// Calls `body` with the slot of every entry, in slot order (never an order that work or output depends on:
    /// callers collect, count or filter).
    @inline(__always)
    func forEachSlot(_ body: (Int) throws -> Void) rethrows {
        for i in 0..<capacity where control[i] == Self.full { try body(i) }
    }

    /// Rebuilds the table with `size` slots (a power of two, at least 128) and no markers.
    private func rehash(to size: Int) {
        let (oldControl, oldIDs, oldValues, oldCapacity) = (control, ids, values, capacity)
        var size = size
        // Each entry's new slot, found before anything moves: a place full in every group (a small table) starts
        // again with twice the slots.
        var targets = [Int](repeating: -1, count: oldCapacity)
        place: while true {
            capacity = size
            control = .allocate(capacity: capacity)
            control.initialize(repeating: Self.empty, count: capacity)
            for j in 0..<oldCapacity where oldControl[j] == Self.full {
                var i = home(oldIDs[j])
                var steps = 0
                while control[i] != Self.empty {
                    i = next(i)
                    steps += 1
                    if steps == capacity >> 4 {
                        control.deallocate()
                        size *= 2
                        continue place
                    }
                }
                control[i] = Self.full
                targets[j] = i
            }
            break
        }
        ids = .allocate(capacity: capacity)
        values = .allocate(capacity: capacity)
        for j in 0..<oldCapacity where targets[j] >= 0 {
            (ids + targets[j]).initialize(to: oldIDs[j])
            (values + targets[j]).moveInitialize(from: oldValues + j, count: 1)
        }
        markers = 0
        oldControl.deallocate()
        oldIDs.deallocate()
        oldValues.deallocate()
    }
}

/// Gives each ``IDTable`` a seed of its own.
private enum IDTableSeed {
    private static let counter = Atomic<Int>(0)
    static func next() -> Int { counter.add(0x9E37_79B9, ordering: .relaxed).newValue }
}
