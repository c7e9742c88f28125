import Dispatch
import Foundation
import Synchronization

/// The coordinator's row cache (semantics §2.3): a snapshot, version and timestamp per row, kept while some
/// object uses it (snapshot reference counting) and released when none does.
final class RowCache: Sendable {
    enum Lookup {
        case fresh(RowSnapshot)
        case deleted
        case miss
    }

    // The count and the flag are declared last, sharing a word: 48 bytes an entry (56 in another order;
    // LayoutTests). A large fetch's first install touches the table's memory page by page.
    private struct Entry {
        var row: RowSnapshot?
        var timestamp: UInt64 = 0
        /// The newest version this entry held, kept when the row is forgotten (``invalidate(_:)``): no older row
        /// is cached again while the entry lives. 0 after a delete.
        var newest: Int64 = 0
        /// The ``generation`` of the last authoritative change of this entry (a save's rows, a delete, a conflict's
        /// database row): a read whose snapshot began before it leaves the entry's row alone.
        var writtenAt: UInt64 = 0
        var references: Int32 = 0
        var deleted = false
    }

    /// The bytes an entry takes in the table (for LayoutTests).
    static var entryStride: Int { MemoryLayout<Entry>.stride }

    private let entries = Mutex(IDTable<Entry>())
    /// Counts every change, under the table's lock, away from an entry's row or delete: a row replaced, a delete, a
    /// row forgotten (a row stored where the entry had none changes nothing a fault holds). A fetch's install marks the rows that became their entries' rows with the count at
    /// its end (``installRetaining(_:snapshot:)``): while the count has not moved and a fault holds its reference
    /// (so its entry stays), the entry still holds that row, and firing the fault takes it without a lookup
    /// (``holdsUnchanged(since:)``). Starts at 1: 0 marks a row not known to be its entry's.
    private let changes = Atomic<UInt64>(1)

    /// Whether no entry has changed since an install marked its rows with `count`.
    @inline(__always)
    func holdsUnchanged(since count: UInt64) -> Bool {
        count != 0 && changes.load(ordering: .acquiring) == count
    }

    /// One change of an existing entry's row or state (called under the table's lock).
    @inline(__always)
    private func noteChange() { changes.add(1, ordering: .releasing) }
    /// Counts the authoritative changes. A read takes the value before its first statement
    /// (``reading(_:)``) and installs its rows with it: every change counted after that value may be newer than what
    /// the read saw, so its row does not replace the entry such a change wrote, even at the same or a higher version
    /// (a delete keeps no version to compare with).
    private let generation = Atomic<UInt64>(0)
    /// The reads under way and, while any is, the generation of the last authoritative change of rows that have no
    /// entry now (released, or never cached): a read begun before such a change must not create an entry with the
    /// row it read (a save of a row nobody held, then a fetch that read it before the commit).
    private struct Reads {
        var active: [UInt64: Int] = [:]
        var departed: [ManagedObjectID: UInt64] = [:]
    }
    private let reads = Mutex(Reads())
    /// The number of reads under way, for the writer's fast path (no lock while nobody reads).
    private let activeReads = Atomic<Int>(0)

    /// Runs a read of rows that `body` installs with the snapshot it is given (``install(_:retain:snapshot:)``):
    /// the generation before the read's first statement (readers of the pool and the writer run at once).
    func reading<T>(_ body: (UInt64) throws -> T) rethrows -> T {
        // Sequentially consistent on both sides: either this read sees a change's generation, or the change sees this
        // read under way and keeps its generation for it (``departed``).
        activeReads.add(1, ordering: .sequentiallyConsistent)
        let snapshot = reads.withLock { r in
            let g = generation.load(ordering: .sequentiallyConsistent)
            r.active[g, default: 0] += 1
            return g
        }
        defer {
            reads.withLock { r in
                if r.active[snapshot] == 1 { r.active[snapshot] = nil } else { r.active[snapshot]! -= 1 }
                if r.active.isEmpty {
                    r.departed.removeAll()
                } else if r.departed.count > 4096, let oldest = r.active.keys.min() {
                    r.departed = r.departed.filter { $0.value > oldest }
                }
            }
            activeReads.subtract(1, ordering: .sequentiallyConsistent)
        }
        return try body(snapshot)
    }

    /// Keeps the generation of a change of rows without an entry, while reads are under way.
    private func departing<S: Sequence>(_ changes: S) where S.Element == (ManagedObjectID, UInt64) {
        guard activeReads.load(ordering: .sequentiallyConsistent) > 0 else { return }
        reads.withLock { r in
            guard !r.active.isEmpty else { return }
            for (id, g) in changes where g > 0 { r.departed[id] = max(r.departed[id] ?? 0, g) }
        }
    }

    /// The generations of changes of rows without an entry, for a read's install (empty while nobody reads).
    private func departedChanges() -> [ManagedObjectID: UInt64] {
        guard activeReads.load(ordering: .sequentiallyConsistent) > 0 else { return [:] }
        return reads.withLock { $0.departed }
    }

    static func now() -> UInt64 { Execution.now() }

    /// Number of entries (rows or placeholders kept for objects that use them).
    var count: Int { withTable { $0.count } }

    /// Whether an entry's timestamp is within `staleness` seconds (negative = infinite; 0 = always stale).
    private static func isFresh(_ timestamp: UInt64, staleness: TimeInterval, now: UInt64) -> Bool {
        if staleness < 0 { return true }
        if staleness == 0 { return false }
        return Double(now &- timestamp) <= staleness * 1e9
    }

    func lookup(_ id: ManagedObjectID, staleness: TimeInterval) -> Lookup {
        // Only a finite, positive staleness needs the clock (infinite: always fresh; 0: never).
        let now = staleness > 0 ? Self.now() : 0
        return withTable { table in
            guard let entry = table[id] else { return .miss }
            if entry.deleted { return .deleted }
            guard let row = entry.row, Self.isFresh(entry.timestamp, staleness: staleness, now: now) else { return .miss }
            return .fresh(row)
        }
    }

    /// The cached version of a row: nil when unknown, 0 when the row was deleted through this coordinator.
    func version(of id: ManagedObjectID) -> (version: Int64, row: RowSnapshot?)? {
        withTable { table in
            guard let entry = table[id] else { return nil }
            if entry.deleted { return (0, nil) }
            guard let row = entry.row else { return nil }
            return (row.version, row)
        }
    }

    /// The rows among `expected` whose cached version is known and is not the one given (layer 1 of conflict
    /// detection, semantics §1.1), with the cached version (0: deleted through this coordinator) and row, in the
    /// order given: ``version(of:)`` for each, under one lock and without copying the rows that agree (a save
    /// checked each updated row under a lock of its own, 0.1k instructions per row).
    func versionMismatches<S: Sequence>(_ expected: S) -> [(id: ManagedObjectID, expected: Int64, cached: Int64, row: RowSnapshot?)]
    where S.Element == (ManagedObjectID, Int64) {
        var result: [(id: ManagedObjectID, expected: Int64, cached: Int64, row: RowSnapshot?)] = []
        inBatches(expected) { table, element in
            let (id, version) = element
            guard let i = table.index(forKey: id) else { return }
            if table[slot: i].deleted {
                if version != 0 { result.append((id, version, 0, nil)) }
                return
            }
            guard let cached = table[slot: i].row?.version, cached != version else { return }
            result.append((id, version, cached, table[slot: i].row))
        }
        return result
    }

    /// The most rows one hold of the table's lock goes through: a save of 100k rows installs, checks or releases
    /// them in holds of this many, so that a fetch or a fault of another context, which reads on a read connection
    /// beside the save, waits for one hold at most, not for the whole save's.
    static let lockBatch = 1024

    /// Runs `body` for each element under the table's lock, released and taken again every ``lockBatch`` elements;
    /// between two holds the short holds that wait (``withTable(_:)``) go first.
    /// `atEachHold` runs first in every hold (an install's stamp is taken again with each).
    private func inBatches<S: Sequence>(_ elements: S, atEachHold: () -> Void = {}, _ body: (inout IDTable<Entry>, S.Element) -> Void) {
        var iterator = elements.makeIterator()
        var more = true
        while more {
            withTable { table in
                atEachHold()
                for _ in 0..<Self.lockBatch {
                    guard let element = iterator.next() else {
                        more = false
                        return
                    }
                    body(&table, element)
                }
            }
            if more { letWaitersIn() }
        }
    }

    /// Short holds (a fetch's or a fault's rows, one reference) waiting for the table's lock now.
    private let waiting = Atomic<Int>(0)
    /// References given back while the table's lock was taken (``release(_:)`` from an object's deinit), applied by
    /// the next hold before anything else, so that no one sees the table without them.
    private let pendingReleases = Mutex<[ManagedObjectID]>([])
    private let pendingReleaseCount = Atomic<Int>(0)

    /// Runs a hold of the table's lock: at once when the lock is free, else announced in ``waiting`` so that a long
    /// run of holds (a large save's install) lets it in at its next pause instead of taking the lock again first. A
    /// lock taken again by the thread that just released it wins against a waiter that still has to wake up, so
    /// without this a fetch beside a 100k-row save waited for many holds, not one. Every hold
    /// first applies the references given back meanwhile.
    private func withTable<R>(_ body: (inout IDTable<Entry>) -> R) -> R {
        if let result = entries.withLockIfAvailable({ table in
            applyPendingReleases(&table)
            return body(&table)
        }) { return result }
        waiting.add(1, ordering: .relaxed)
        return entries.withLock { table in
            waiting.subtract(1, ordering: .relaxed)
            applyPendingReleases(&table)
            return body(&table)
        }
    }

    /// Runs `body` while this thread holds the table's lock, as a long hold of a save's install does (tests).
    func holdingTableForTesting(_ body: () -> Void) {
        entries.withLock { _ in body() }
    }

    private func applyPendingReleases(_ table: inout IDTable<Entry>) {
        guard pendingReleaseCount.load(ordering: .acquiring) > 0 else { return }
        let ids = pendingReleases.withLock { pending in
            let taken = pending
            pending.removeAll(keepingCapacity: true)
            pendingReleaseCount.store(0, ordering: .releasing)
            return taken
        }
        for id in ids {
            if let gone = Self.release(id, in: &table) { departing(CollectionOfOne(gone)) }
        }
    }

    /// Between two holds of a long run: while short holds wait, gives them the lock (bounded: a waiter that is not
    /// scheduled soon is not waited for).
    private func letWaitersIn() {
        var turns = 0
        while waiting.load(ordering: .relaxed) > 0, turns < 256 {
            sched_yield()
            turns += 1
        }
    }

    func retain(_ id: ManagedObjectID) {
        withTable { $0[id, default: Entry()].references += 1 }
    }

    /// One reference more for each of `ids` (an ID listed twice gains two), under one lock: for a context that
    /// hands references to many objects at once.
    func retain<S: Sequence>(_ ids: S) where S.Element == ManagedObjectID {
        inBatches(ids) { table, id in table[id, default: Entry()].references += 1 }
    }

    /// One reference less (an object let go of its row). An object's deinit gives it back: when a long hold (a large
    /// save's install) has the table, the reference waits in ``pendingReleases`` for the next hold instead of the
    /// deallocating thread waiting for the lock (a fetch's 20 objects released one by one waited for 20 holds).
    func release(_ id: ManagedObjectID) {
        let done: Void? = entries.withLockIfAvailable { table in
            applyPendingReleases(&table)
            if let gone = Self.release(id, in: &table) { departing(CollectionOfOne(gone)) }
        }
        guard done == nil else { return }
        pendingReleases.withLock { pending in
            pending.append(id)
            pendingReleaseCount.add(1, ordering: .releasing)
        }
    }

    func release<S: Sequence>(_ ids: S) where S.Element == ManagedObjectID {
        inBatches(ids) { table, id in
            if let gone = Self.release(id, in: &table) { departing(CollectionOfOne(gone)) }
        }
    }

    /// One reference less; the entry goes with its last reference. One hash lookup for both. Returns the entry's
    /// last authoritative change when it went and one was recorded.
    private static func release(_ id: ManagedObjectID, in table: inout IDTable<Entry>) -> (ManagedObjectID, UInt64)? {
        guard let i = table.index(forKey: id) else { return nil }
        if table[slot: i].references > 1 {
            table[slot: i].references -= 1
            return nil
        }
        let writtenAt = table[slot: i].writtenAt
        table.remove(at: i)
        return writtenAt > 0 ? (id, writtenAt) : nil
    }

    /// Stores fresh rows. With `retain`, each row gains one reference that the caller hands to an object or
    /// gives back with ``release(_:)``; without, rows nobody uses are not kept. A row older than one the entry
    /// held leaves it as it is (the reference is still taken).
    /// `snapshot`: the ``snapshotGeneration`` a read took before reading the rows; nil for the authoritative rows
    /// of a save or of the database inside its transaction, which every later read must respect.
    func install(_ rows: [(ManagedObjectID, RowSnapshot)], retain: Bool, snapshot: UInt64? = nil) {
        install(rows, count: rows.count, retain: retain, snapshot: snapshot)
    }

    /// ``install(_:retain:)`` for rows produced on the way (a fetch's rows with their IDs, without an array of
    /// them first); `count` is at least the number of rows, to size the table once.
    /// `holding`: each row also gains one reference for the save's did-save notification, taken in the same hash
    /// lookup as the install (``SaveReferences``): the result is that of this install followed by ``retain(_:)`` of
    /// every row (without `retain`, a row nobody referenced is still not cached; its entry only holds the reference).
    func install<Rows: Sequence>(_ rows: Rows, count: Int, retain: Bool, holding: Bool = false, snapshot: UInt64? = nil)
    where Rows.Element == (ManagedObjectID, RowSnapshot) {
        guard count > 0 else { return }
        let now = Self.now()
        let generation = self.generation(snapshot)
        // Sized for new entries only with `retain`: the rows a save holds without it are updates, cached already or
        // not at all, and reserving room for all of them rehashed the whole table (0.5M cache misses in a save of 100k).
        if retain { withTable { $0.reserveCapacity($0.count + count) } }
        let references: Int32 = (retain ? 1 : 0) + (holding ? 1 : 0)
        var stamp = Stamp.authoritative(0)
        // The reads under way are looked at again with each hold of the lock.
        inBatches(rows, atEachHold: { stamp = self.stamp(generation) }) { table, element in
            let (id, row) = element
            if retain {
                // One hash lookup per row: the entry is created or updated in place.
                store(row, now: now, in: &table[id, default: Entry()], references: references, stamp: stamp, id: id)
            } else if holding {
                // One hash lookup per row for the install and the notification's reference.
                self.storeReferenced(row, now: now, in: &table[id, default: Entry()], stamp: stamp, id: id)
            } else if let i = table.index(forKey: id), table[slot: i].references > 0 {
                store(row, now: now, in: &table[slot: i], references: 0, stamp: stamp, id: id)
            } else if case .authoritative(let g) = stamp, activeReads.load(ordering: .sequentiallyConsistent) > 0 {
                departing(CollectionOfOne((id, g)))
            }
        }
    }

    /// An install without `retain` into `entry` (stored only when some object references the row, the departed
    /// change recorded otherwise), then one reference more on it.
    private func storeReferenced(_ row: RowSnapshot, now: UInt64, in entry: inout Entry, stamp: Stamp, id: ManagedObjectID) {
        if entry.references > 0 {
            store(row, now: now, in: &entry, references: 0, stamp: stamp, id: id)
        } else if case .authoritative(let g) = stamp, activeReads.load(ordering: .sequentiallyConsistent) > 0 {
            departing(CollectionOfOne((id, g)))
        }
        entry.references += 1
    }

    /// How an install is stamped: an authoritative one takes the next generation (under the table's lock), a read
    /// keeps the generation its snapshot began at, and the changes of rows without an entry made since.
    private enum Stamp {
        case authoritative(UInt64)
        case read(UInt64, departed: [ManagedObjectID: UInt64])
    }

    /// An install's generation: a read's snapshot, or the next one for an authoritative install (taken once for all
    /// its rows).
    private enum Generation {
        case read(UInt64)
        case authoritative(UInt64)
    }

    private func generation(_ snapshot: UInt64?) -> Generation {
        if let snapshot { return .read(snapshot) }
        return .authoritative(generation.add(1, ordering: .sequentiallyConsistent).newValue)
    }

    /// The stamp of one hold of the lock (a read takes the departed changes again under each).
    private func stamp(_ generation: Generation) -> Stamp {
        switch generation {
        case .read(let snapshot): .read(snapshot, departed: departedChanges())
        case .authoritative(let g): .authoritative(g)
        }
    }

    /// ``install(_:count:retain:)`` with a reference each for a fetch's rows, skipping the entries without a row:
    /// a loop over the fetch's own array, without the lazy filter and its closures per row (0.1k instructions).
    /// Marks each row that became its entry's row with the change count at the end of the install
    /// (``FetchEntry/cachedAt``), unless another change came between two holds of the lock (then none is marked).
    func installRetaining(_ rows: inout [FetchEntry], snapshot: UInt64? = nil) {
        guard !rows.isEmpty else { return }
        let now = Self.now()
        let generation = self.generation(snapshot)
        withTable { $0.reserveCapacity($0.count + rows.count) }
        var stamp = Stamp.authoritative(0)
        // The count this install expects at each hold: the one at its first hold, plus its own changes.
        var expected: UInt64 = 0
        var undisturbed = true
        inBatches(rows.indices, atEachHold: {
            stamp = self.stamp(generation)
            let count = changes.load(ordering: .relaxed)
            if expected == 0 { expected = count } else if count != expected { undisturbed = false }
        }) { table, i in
            guard let row = rows[i].row else { return }
            let id = rows[i].id
            let outcome = store(row, now: now, in: &table[id, default: Entry()], references: 1, stamp: stamp, id: id)
            if outcome.replaced { expected &+= 1 }
            if outcome.stored { rows[i].cachedAt = 1 }
        }
        for i in rows.indices where rows[i].cachedAt != 0 { rows[i].cachedAt = undisturbed ? expected : 0 }
    }

    /// Stores `row` in `entry` as the rules below allow. `stored`: the entry holds `row` now; `replaced`: it
    /// changed what a lookup of an entry that had a row or a delete returns, which is counted here (``noteChange()``).
    @discardableResult
    private func store(_ row: RowSnapshot, now: UInt64, in entry: inout Entry, references: Int32, stamp: Stamp, id: ManagedObjectID? = nil) -> (stored: Bool, replaced: Bool) {
        entry.references += references
        switch stamp {
        case .read(let snapshot, let departed):
            // A read that began before the writer installed this entry (or changed the row while it
            // had no entry) read the file as it was before that save; its row, whatever its version, must not replace
            // the save's (a deleted entry included: a delete keeps no version to compare with).
            if snapshot < entry.writtenAt { return (false, false) }
            if !departed.isEmpty, let id, let g = departed[id], snapshot < g { return (false, false) }
        case .authoritative(let generation):
            entry.writtenAt = generation
        }
        // Semantics §1.1, §2.3: a cached row only moves to newer versions. Rows are read on the coordinator's queue
        // and cached after leaving it, so a fetch, a fault or a conflict check can come back with a row older than
        // the one a save of this coordinator committed and cached meanwhile. Put back, that older row became the
        // "store's values" of the next layer-1 conflict, and a merge policy took them for properties the saving
        // context had changed itself: an acknowledged write lost (ConcurrencyStressTests). An entry marked deleted
        // takes any row (an Overwrite resurrects a deleted row at version 1); a forgotten one none older than it had.
        if row.version < entry.newest { return (false, false) }
        let replaced = entry.row != nil || entry.deleted
        if replaced { noteChange() }
        entry.newest = row.version
        entry.row = row
        entry.deleted = false
        entry.timestamp = now
        return (true, replaced)
    }

    func markDeleted<S: Sequence>(_ ids: S) where S.Element == ManagedObjectID {
        let stamp = generation.add(1, ordering: .sequentiallyConsistent).newValue
        inBatches(ids) { table, id in
            guard let i = table.index(forKey: id) else {
                if activeReads.load(ordering: .sequentiallyConsistent) > 0 { departing(CollectionOfOne((id, stamp))) }
                return
            }
            noteChange()
            table[slot: i].row = nil
            table[slot: i].deleted = true
            table[slot: i].newest = 0
            table[slot: i].writtenAt = stamp
        }
    }

    /// The cached rows among `ids` (walking the smaller of the two).
    func rows(among ids: Set<ManagedObjectID>) -> [(ManagedObjectID, RowSnapshot?)] {
        withTable { table in
            var result: [(ManagedObjectID, RowSnapshot?)] = []
            if table.count < ids.count {
                table.forEachSlot { i in
                    let id = table.key(at: i)
                    if ids.contains(id) { result.append((id, table[slot: i].deleted ? nil : table[slot: i].row)) }
                }
            } else {
                for id in ids { if let entry = table[id] { result.append((id, entry.deleted ? nil : entry.row)) } }
            }
            return result
        }
    }

    /// Forgets cached data (not references) so the next fault reads the store.
    func invalidate<S: Sequence>(_ ids: S) where S.Element == ManagedObjectID {
        withTable { table in
            for id in ids {
                guard let i = table.index(forKey: id) else { continue }
                noteChange()
                table[slot: i].row = nil
                table[slot: i].deleted = false
            }
        }
    }
}

/// The rows a save wrote to the store, kept in the saving coordinator's row cache for as long as the did-save
/// notification that announces them lives (Rule 32; semantics §2.3 and §3.1).
///
/// Core Data's did-save notification carries the saved managed objects themselves, held strongly by its
/// `userInfo` until the last observer lets go of it (an automatic merge, or a block that merges it later on
/// another context's queue); each of those objects keeps its snapshot in the coordinator's row cache ("Automatic
/// Snapshot Management"). So a context on the same coordinator that merges the save finds the inserted and
/// updated rows cached and fulfils their faults without SQL, even when the saving context was reset right after
/// saving. This reference does that for our notification, independently of what happens to the saving context's
/// objects: one cache reference per inserted and updated row, given back when the notification (and any merge
/// that captured this object) is released. Deleted rows are not held: a merge does not fault them.
final class SavedRows: Sendable {
    /// The saved objects' IDs (permanent), as the did-save-object-IDs notification of the same save has them.
    let changes: ContextObjectIDChanges
    private let cache: RowCache

    /// `taken`: the references the coordinator took when it cached the saved rows. They are this notification's
    /// when they are on exactly the rows it names (the usual case: every updated object wrote its row); otherwise
    /// (an object updated by a transient change alone is named but wrote no row) the rows are retained here and
    /// `taken` gives its references back when it goes.
    init(_ changes: ContextObjectIDChanges, cache: RowCache, taken: SaveReferences? = nil) {
        self.changes = changes
        self.cache = cache
        if let taken, taken.cache === cache, taken.covers(changes) {
            taken.adopt()
        } else {
            cache.retain(changes.inserted)
            cache.retain(changes.updated)
        }
    }

    deinit {
        cache.release(changes.inserted)
        cache.release(changes.updated)
    }

    /// The `userInfo` key of a did-save notification under which the save's ``SavedRows`` travel.
    static let userInfoKey = "_ObjectGraphSavedRows"

    /// The saved rows a did-save notification carries, if it was posted by a context that saved to a coordinator.
    static func of(_ notification: Notification) -> SavedRows? {
        notification.userInfo?[userInfoKey] as? SavedRows
    }
}

/// The references a coordinator's save took on the rows it wrote and cached, one per inserted and updated row, in
/// the same hash lookup as their install: the did-save notification's ``SavedRows`` adopts them
/// instead of looking every row up once more. Given back when this goes, unless adopted.
final class SaveReferences: Sendable {
    fileprivate let cache: RowCache
    /// The rows held: the request's inserts (their permanent IDs) and updates.
    private let inserted: [ManagedObjectID]
    private let updated: [ManagedObjectID]
    private let adopted = Atomic<Bool>(false)

    init(cache: RowCache, inserted: [ManagedObjectID], updated: [ManagedObjectID]) {
        (self.cache, self.inserted, self.updated) = (cache, inserted, updated)
    }

    /// Whether these are the references `changes` needs. A save's written rows are among the objects its
    /// notification names (distinct IDs on both sides), so equal counts mean the same rows.
    fileprivate func covers(_ changes: ContextObjectIDChanges) -> Bool {
        changes.inserted.count == inserted.count && changes.updated.count == updated.count
    }

    /// Hands the references over: whoever adopts them gives them back.
    fileprivate func adopt() { adopted.store(true, ordering: .relaxed) }

    deinit {
        guard !adopted.load(ordering: .relaxed) else { return }
        cache.release(inserted)
        cache.release(updated)
    }
}
