import Foundation

/// An object of the graph (`NSManagedObject`): registered in one context, identified by its ``objectID``,
/// a fault until its data is needed (semantics §4).
///
/// Subclass it for typed properties:
/// ```swift
/// final class Item: ManagedObject {
///     @Managed("name") var name: String?
///     @Managed("price") var price: Double
///     @Managed("tag") var tag: Tag?
/// }
/// ```
/// Objects are not thread-safe: use one only on its context's queue (`perform`/`performAndWait`).
open class ManagedObject: Hashable {  // not Sendable, like NSManagedObject: pass objectIDs between queues
    /// The object's entity.
    public let entity: EntityDescription
    /// The object's ID: temporary until its root context saves it.
    public internal(set) var objectID: ManagedObjectID {
        get { storedObjectID }
        set { storedObjectID = newValue }
    }
    /// The context the object is registered in; nil once deleted and saved, or after the context's reset.
    public internal(set) var managedObjectContext: ManagedObjectContext? {
        get { storedContext?.takeUnretainedValue() }
        set { storedContext = newValue.map { Unmanaged.passUnretained($0) } }
    }
    // Run-time exclusivity checks (`swift_beginAccess`) are off for the object's state: it is confined to its
    // context's queue (checked by `assertOnQueue`), and every access to it is a short read or write that never
    // overlaps another; the checks were 8 % of an import's instructions (Benchmarks/LOG.md, fix 12).
    @exclusivity(unchecked) private var storedObjectID: ManagedObjectID
    // Not a weak reference: a weak reference gives the context a side table, and every retain of the context
    // (each setter reads it) then takes the slow path. An object points at its context only while registered
    // there; the context clears the pointer when it unregisters the object, resets, or is deinitialized.
    // Held as an unmanaged pointer (what `unowned(unsafe)` is) so that hot paths can call the context without
    // retaining it: every retain of a context takes the slow path, since observers capture it weakly.
    @exclusivity(unchecked) private var storedContext: Unmanaged<ManagedObjectContext>?

    /// Runs `body` with the object's context, if any, without retaining the context (setters call it on every
    /// change: the queue check and the change note).
    @inline(__always) func withContext(_ body: (ManagedObjectContext) -> Void) {
        storedContext?._withUnsafeGuaranteedRef(body)
    }

    /// ``withContext(_:)`` for a body that returns a value or throws: nil without a context.
    @inline(__always) func withContext<R>(_ body: (ManagedObjectContext) throws -> R) rethrows -> R? {
        try storedContext?._withUnsafeGuaranteedRef(body)
    }

    /// Whether both objects are in the same context, or both in none (compared without retaining either).
    func isInSameContext(as other: ManagedObject) -> Bool {
        storedContext?.toOpaque() == other.storedContext?.toOpaque()
    }

    // MARK: State (on the context's queue)
    // The flags are declared together: a class lays its stored properties out in the order declared, and a Bool
    // alone between two references takes a word (two of them outside this run would make every object 16 bytes
    // larger: for an entity with five properties, 384 bytes from the allocator instead of 320).
    /// Whether a transient attribute changed since the object was loaded, inserted or saved (Rule 3: a
    /// transient change alone makes the object updated, though it writes nothing).
    @exclusivity(unchecked) var transientsChanged = false
    /// Whether delete rules already ran for this deleted object.
    @exclusivity(unchecked) var deletePropagated = false
    @exclusivity(unchecked) var isFaultFlag = false
    @exclusivity(unchecked) var isInsertedFlag = false
    @exclusivity(unchecked) var isDeletedFlag = false
    /// Whether the context's next objects-did-change announces this object's insert (it is in the context's
    /// pending inserts); a change to it then records nothing more (no hashed membership test per setter).
    @exclusivity(unchecked) var isInsertPending = false
    /// Whether the object is in its context's updated set, and in its pending updates (see `markUpdated`).
    @exclusivity(unchecked) var isInUpdatedSet = false
    @exclusivity(unchecked) var isUpdatePending = false
    /// Current values of the persistent slots (attributes, then to-ones); empty while a fault.
    @exclusivity(unchecked) var values: [PropertyValue] = []
    /// The committed snapshot (semantics §0): values and the version (`Z_OPT`) they were loaded at.
    @exclusivity(unchecked) package var original: RowSnapshot?
    /// Slots whose current value differs from the committed snapshot (semantics §1.5 `locallyChanged`).
    @exclusivity(unchecked) var changedSlots = SlotSet()
    /// To-many relationships: nil while a relationship fault.
    @exclusivity(unchecked) var toMany: [ToManyState?] = []
    @exclusivity(unchecked) var transients: [PropertyValue] = []
    /// The IDs each transient relationship holds, by index in the entity's `transientRelationships` (Rule
    /// 21.2); empty (no array) while every one is empty, so entities without them pay nothing.
    @exclusivity(unchecked) var transientLinks: [Set<ManagedObjectID>] = []
    /// Where an object dropped by its context's reset (or deinitialization) fulfils its fault: Rule 2,
    /// an orphaned fault reads its row from the store without a context, as Core Data's does.
    @exclusivity(unchecked) var orphanSource: OrphanSource?

    /// The store an orphaned fault reads from, with its context's staleness, or nil to fail instead
    /// (``ManagedObjectContext/orphanedFaultsFailToFire``).
    struct OrphanSource {
        let coordinator: PersistentStoreCoordinator?
        let stalenessInterval: TimeInterval
    }
    /// The row cache this object holds a reference in (snapshot reference counting, semantics §2.3). Letting go
    /// of it forgets ``fetchedRow``: without the reference the entry may go and come back with another row.
    @exclusivity(unchecked) var cacheReference: RowCache? {
        didSet { if cacheReference !== oldValue { fetchedRow = nil } }
    }
    /// The row the fetch that made this fault installed in the row cache, with the cache's change count then
    /// (``RowCache/holdsUnchanged(since:)``): while the count stands, the entry this fault references holds exactly
    /// this row, so firing takes it without looking the entry up. Taken by the first firing.
    @exclusivity(unchecked) var fetchedRow: (row: RowSnapshot, cachedAt: UInt64)?
    /// Fetch batch this fault belongs to (`fetchBatchSize`).
    @exclusivity(unchecked) var faultBatch: FaultBatch?
    /// Related objects this object holds strongly once they were read (to-one slots, and to-many indexes offset
    /// by ``heldToManyOffset``), as a Core Data object holds its relationships; refresh and reset release them,
    /// which is how Core Data breaks retain cycles (semantics §3.2, §4).
    @exclusivity(unchecked) var heldObjects: HeldObjects?

    /// The related objects an object holds: a few (its to-ones and to-manys that were read), so a short list
    /// searched by key, with a to-one's object held directly. A dictionary and a one-element array per object would
    /// cost a fetch that reads each object's to-one about six times the instructions (an allocation and a seeded
    /// hash each).
    struct HeldObjects {
        private struct Entry {
            let key: Int
            var one: ManagedObject?
            var many: [ManagedObject]
        }
        /// The first to-one held, kept in place (its key, or -1): most objects hold one to-one and nothing else,
        /// and a list of entries costs them an allocation each (about 0.4k instructions per object in a fetch that
        /// reads every object's to-one). It is an entry like the others, with no to-many members.
        private var inlineKey = -1
        private var inlineOne: ManagedObject?
        private var entries: [Entry] = []

        /// The object held for a to-one slot.
        func one(_ key: Int) -> ManagedObject? {
            if inlineKey == key { return inlineOne }
            for entry in entries where entry.key == key { return entry.one }
            return nil
        }

        /// The objects held for a to-many (at its offset key).
        func many(_ key: Int) -> [ManagedObject]? {
            if inlineKey == key { return inlineOne.map { [$0] } ?? [] }
            for entry in entries where entry.key == key { return entry.one.map { [$0] } ?? entry.many }
            return nil
        }

        mutating func hold(one object: ManagedObject, at key: Int) {
            remove(key)
            if inlineKey < 0 {
                (inlineKey, inlineOne) = (key, object)
            } else {
                entries.append(Entry(key: key, one: object, many: []))
            }
        }

        mutating func hold(many objects: [ManagedObject], at key: Int) {
            remove(key)
            entries.append(Entry(key: key, one: nil, many: objects))
        }

        mutating func remove(_ key: Int) {
            if inlineKey == key {
                (inlineKey, inlineOne) = (-1, nil)
            } else if let i = entries.firstIndex(where: { $0.key == key }) {
                entries.remove(at: i)
            }
        }

        /// Adds `object` to the objects held for a to-many (at its offset key), starting the list if needed.
        mutating func add(_ object: ManagedObject, toMany key: Int) {
            if inlineKey == key {
                entries.append(Entry(key: key, one: inlineOne, many: [object]))
                (inlineKey, inlineOne) = (-1, nil)
            } else if let i = entries.firstIndex(where: { $0.key == key }) {
                entries[i].many.append(object)
            } else {
                entries.append(Entry(key: key, one: nil, many: [object]))
            }
        }

        /// Lets go of the objects held for a to-many (at its offset key) whose IDs `keep` refuses.
        mutating func prune(toMany key: Int, keeping keep: (ManagedObjectID) -> Bool) {
            if inlineKey == key {
                if let one = inlineOne, !keep(one.objectID) { inlineOne = nil }
                return
            }
            guard let i = entries.firstIndex(where: { $0.key == key }) else { return }
            if let one = entries[i].one, !keep(one.objectID) { entries[i].one = nil }
            if entries[i].many.contains(where: { !keep($0.objectID) }) { entries[i].many.removeAll { !keep($0.objectID) } }
        }

        /// Lets go of the to-one objects that `values` do not name (a fault filled with a newer row).
        mutating func pruneToOnes(_ values: [PropertyValue]) {
            func stale(_ key: Int, _ one: ManagedObject?) -> Bool {
                guard key < ManagedObject.heldToManyOffset else { return false }
                guard key < values.count, let one else { return true }
                return values[key] != .objectID(one.objectID)
            }
            if inlineKey >= 0, stale(inlineKey, inlineOne) { (inlineKey, inlineOne) = (-1, nil) }
            if !entries.isEmpty { entries.removeAll { stale($0.key, $0.one) } }
        }

        var isEmpty: Bool { inlineKey < 0 && entries.isEmpty }

        /// Lets go of the objects held for transient relationships.
        mutating func removeTransientRelationships() {
            if inlineKey >= ManagedObject.heldTransientOffset { (inlineKey, inlineOne) = (-1, nil) }
            entries.removeAll { $0.key >= ManagedObject.heldTransientOffset }
        }
    }
    /// Slots changed since the last objects-did-change was posted (`changedValuesForCurrentEvent`).
    @exclusivity(unchecked) var eventChangedSlots = SlotSet()
    static let heldToManyOffset = 1 << 20
    /// Where the objects held for transient relationships are keyed in ``heldObjects`` (offset + index).
    static let heldTransientOffset = 1 << 21
    /// Inverse changes to one-to-many relationships that are not loaded (faults), by to-many index: applied when
    /// the relationship is loaded, dropped once saved (the store then holds them as foreign keys). Setting
    /// `item.group` thus never loads `group.items`, as in Core Data (semantics §4). Each change is appended to a
    /// log, in order (an import adds one member per item: an append, not a hashed set insert); only the last
    /// change of each ID counts when the log is laid on the stored IDs.
    @exclusivity(unchecked) var pendingToMany: [PendingToManyLog]?

    struct PendingToManyLog {
        private(set) var changes: [(id: ManagedObjectID, added: Bool)] = []
        var isEmpty: Bool { changes.isEmpty }

        mutating func append(_ id: ManagedObjectID, added: Bool) {
            changes.append((id, added))
            // A log that only grows (an ID moved back and forth without a save) is folded to its last change per
            // ID from time to time, so it stays as long as the set of IDs it names.
            if changes.count >= 1024, changes.count & (changes.count - 1) == 0 { fold() }
        }

        /// Lays the changes on `ids`, in order.
        func apply(to ids: inout Set<ManagedObjectID>) {
            for (id, added) in changes {
                if added { ids.insert(id) } else { ids.remove(id) }
            }
        }

        mutating func remap(_ mapping: [ManagedObjectID: ManagedObjectID]) {
            for i in changes.indices where changes[i].id.isTemporaryID {
                if let new = mapping[changes[i].id] { changes[i].id = new }
            }
        }

        private mutating func fold() {
            var last: [ManagedObjectID: Bool] = [:]
            var order: [ManagedObjectID] = []
            for (id, added) in changes where last.updateValue(added, forKey: id) == nil { order.append(id) }
            changes = order.map { ($0, last[$0]!) }
        }
    }

    /// Loads a to-many relationship's stored IDs, with the pending inverse changes laid on top.
    func installToMany(_ index: Int, stored ids: Set<ManagedObjectID>) {
        install(index, ToManyState(current: ids, original: ids))
    }

    /// Loads an ordered relationship's stored IDs in their order (Docs/coredata-behaviour.md §12.2), with the
    /// pending inverse changes laid on top (a member added from its inverse goes at the end).
    func installToMany(_ index: Int, storedOrder ids: [ManagedObjectID]) {
        install(index, ToManyState(stored: ids))
    }

    private func install(_ index: Int, _ stored: ToManyState) {
        var state = stored
        if let pending = pendingToMany, index < pending.count, !pending[index].isEmpty {
            pending[index].apply(to: &state.current)
            state.reconcileOrder()
            pendingToMany![index] = PendingToManyLog()
            if pendingToMany!.allSatisfy(\.isEmpty) { pendingToMany = nil }
        }
        toMany[index] = state
    }

    /// A loaded to-many relationship: its members, and what the store holds (semantics §1.5).
    struct ToManyState {
        var current: Set<ManagedObjectID>
        var original: Set<ManagedObjectID>
        /// An ordered relationship's members in order (Docs/coredata-behaviour.md §12.3); nil for an unordered
        /// one, which keeps no order and does no work for it. `current` and `order.current` hold the same IDs.
        var order: Order? {
            get { orderBox?.order }
            set { orderBox = newValue.map(OrderBox.init) }
        }
        /// The order behind one reference, so that every loaded to-many of an unordered relationship (most of them)
        /// carries 8 bytes for it, not two arrays. The box never changes: a new order is a new box, so states stay
        /// values.
        private var orderBox: OrderBox?

        /// The members of an ordered relationship in order, now and as the store holds them.
        struct Order: Equatable {
            var current: [ManagedObjectID]
            var original: [ManagedObjectID]
        }

        final class OrderBox {
            let order: Order
            init(_ order: Order) { self.order = order }
        }

        init(current: Set<ManagedObjectID>, original: Set<ManagedObjectID>) {
            self.current = current
            self.original = original
        }

        /// An empty state, ordered when the relationship is (an inserted object's).
        init(current: Set<ManagedObjectID>, original: Set<ManagedObjectID>, ordered: Bool) {
            self.init(current: current, original: original)
            if ordered { order = Order(current: Self.sorted(current), original: Self.sorted(original)) }
        }

        /// An ordered relationship's state loaded from the store, in the store's order.
        init(stored ids: [ManagedObjectID]) {
            let members = Set(ids)
            self.init(current: members, original: members)
            order = Order(current: ids, original: ids)
        }

        /// §12.3: a change of order alone is a change of the relationship.
        var isChanged: Bool { current != original || (order != nil && order!.current != order!.original) }

        /// The members in order: an ordered relationship's order, else the IDs sorted by entity and key (a
        /// stable order for a set).
        var ordered: [ManagedObjectID] { order?.current ?? Self.sorted(current) }

        /// IDs in a stable order (entity, then key; temporary ones after permanent ones in insertion order).
        static func sorted<S: Sequence>(_ ids: S) -> [ManagedObjectID] where S.Element == ManagedObjectID {
            ids.sorted { ($0.entity.entityNumber, $0.isTemporaryID ? 1 : 0, $0.key) < ($1.entity.entityNumber, $1.isTemporaryID ? 1 : 0, $1.key) }
        }

        /// Makes the order hold the members of ``current``: members that left it go, members that joined it are
        /// appended (§12.4: an object that joins an ordered relationship from its inverse goes at the end), several
        /// at once in ``sorted(_:)`` order. No work for an unordered relationship.
        mutating func reconcileOrder() {
            guard var order else { return }
            if order.current.count == current.count, order.current.allSatisfy({ current.contains($0) }) { return }
            var kept = Set<ManagedObjectID>()
            order.current.removeAll { !current.contains($0) || !kept.insert($0).inserted }
            if kept.count < current.count { order.current += Self.sorted(current.subtracting(kept)) }
            self.order = order
        }

        /// Sets an ordered relationship's members and order at once (no work for an unordered relationship but the
        /// members).
        mutating func setOrdered(_ ids: [ManagedObjectID]) {
            current = Set(ids)
            if order != nil { order!.current = ids }
        }

        /// The state as saved: what it holds is what the store holds.
        mutating func settle() {
            original = current
            if order != nil { order!.original = order!.current }
        }
    }

    /// Creates an object of `entity` and inserts it into `context` (`init(entity:insertInto:)`); with a nil
    /// context the object is created unregistered and can be inserted later with
    /// ``ManagedObjectContext/insert(_:)``.
    public required init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        self.entity = entity
        self.storedObjectID = .temporary(entity)
        if let context {
            context.insert(self)
        }
    }

    /// Creates an object of the entity whose class is this class, inserted into `context`.
    public convenience init(context: ManagedObjectContext) {
        guard let entity = context.model.entities.first(where: { $0.managedObjectClass == Self.self }) else {
            preconditionFailure("no entity of the context's model has class \(Self.self)")
        }
        self.init(entity: entity, insertInto: context)
    }

    deinit {
        Probe.freed(self)
        if let cacheReference { cacheReference.release(objectID) }
    }

    /// Sets the state of a newly inserted object: defaults, empty to-manys.
    func prepareForInsert() {
        let template = entity.insertTemplate
        isFaultFlag = false
        values = template.values
        original = nil
        changedSlots = template.changedSlots
        toMany = template.toMany
        transients = template.transients
        transientsChanged = false
        transientLinks = []
    }

    /// Makes the object a fault for `id`.
    func becomeFault() {
        heldObjects = nil
        isFaultFlag = true
        values = []
        original = nil
        changedSlots = []
        toMany = Array(repeating: nil, count: entity.toManyRelationships.count)
        pendingToMany = nil
        resetTransients()
    }

    /// Puts the transient attributes back to their defaults (semantics §3.2: refresh without merging and
    /// reset clear them; Rule 5).
    func resetTransients() {
        transientsChanged = false
        // Rule 21.2: transient relationships are cleared with the transient attributes.
        if !transientLinks.isEmpty {
            transientLinks = []
            heldObjects?.removeTransientRelationships()
        }
        guard !entity.transientAttributes.isEmpty else { return }
        transients = entity.transientAttributes.map { $0.defaultValue.converted(to: $0.type) ?? .null }
    }

    /// Makes a newly created, never used object a fault: its other state is still at its initial values.
    func becomeNewFault() {
        isFaultFlag = true
        let toManyCount = entity.toManyRelationships.count
        if toManyCount > 0 { toMany = Array(repeating: nil, count: toManyCount) }
        let transientAttributes = entity.transientAttributes
        if !transientAttributes.isEmpty { transients = transientAttributes.map { $0.defaultValue.converted(to: $0.type) ?? .null } }
    }

    /// Fills a fault from a row. Objects the fault already held (a to-many read while it was a fault) stay held:
    /// filling must not forget relationship targets (Rule 1); only to-ones the new row does not name go.
    func fill(from row: consuming RowSnapshot) {
        if heldObjects != nil {
            heldObjects!.pruneToOnes(row.values)
            if heldObjects!.isEmpty { heldObjects = nil }
        }
        isFaultFlag = false
        fetchedRow = nil
        values = row.values
        original = consume row
        changedSlots = []
        if toMany.count != entity.toManyRelationships.count {
            toMany = Array(repeating: nil, count: entity.toManyRelationships.count)
        }
    }

    // MARK: State
    /// Whether the object's data is not loaded yet. Reading it does not fire the fault.
    public var isFault: Bool { isFaultFlag }
    /// Whether the object is inserted and not yet saved.
    public var isInserted: Bool { isInsertedFlag }
    /// Whether the object will be deleted at the next save.
    public var isDeleted: Bool { isDeletedFlag }
    /// Whether the object has unsaved changes to its persistent properties (and is neither inserted nor deleted).
    /// A change to a transient attribute alone counts (Rule 3), though a save writes nothing for it.
    public var isUpdated: Bool { !isInsertedFlag && !isDeletedFlag && (transientsChanged || hasPersistentChanges) }
    /// Whether the object is inserted, deleted or updated.
    public var hasChanges: Bool { isInsertedFlag || isDeletedFlag || transientsChanged || hasPersistentChanges }

    var hasPersistentChanges: Bool {
        !changedSlots.isEmpty || toMany.contains { $0?.isChanged == true } || pendingToMany != nil
    }

    /// The version (`Z_OPT`) of the committed snapshot; 0 for inserted objects.
    package var snapshotVersion: Int64 { original?.version ?? 0 }

    // MARK: Life cycle hooks
    /// Called once when the object is inserted (and again in each parent of a child context, semantics §2.2).
    open func awakeFromInsert() {}
    /// Called after a fault's data is loaded.
    open func awakeFromFetch() {}
    /// Called before the object is saved.
    open func willSave() {}
    /// Called after the object was saved.
    open func didSave() {}
    /// Called before the object turns into a fault.
    open func willTurnIntoFault() {}
    /// Called after the object turned into a fault.
    open func didTurnIntoFault() {}
    /// Called when the object is deleted, before delete rules run.
    open func prepareForDeletion() {}

    /// Validation before inserting; the default checks the model's constraints on every property.
    open func validateForInsert() throws { try validatePropertyConstraints() }
    /// Validation before updating; the default checks the model's constraints on every property.
    open func validateForUpdate() throws { try validatePropertyConstraints() }
    /// Validation before deleting; the default refuses a delete that a `deny` rule forbids.
    open func validateForDelete() throws { try validateDenyRules() }

    // MARK: Identity
    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    // The change sets hash objects on every insert and membership test: the address through a short mixer
    // (``wordHash(_:seed:)``), no `Hasher` run.
    public func _rawHashValue(seed: Int) -> Int { wordHash(UInt64(UInt(bitPattern: ObjectIdentifier(self))), seed: seed) }
}

extension ManagedObject: CustomStringConvertible {
    public var description: String {
        if isFaultFlag { return "<\(entity.name) \(objectID); fault>" }
        var parts: [String] = []
        for (i, slot) in entity.slots.enumerated() where i < values.count {
            parts.append("\(slot.name) = \(values[i])")
        }
        return "<\(entity.name) \(objectID); " + parts.joined(separator: ", ") + ">"
    }
}

/// Faults fetched together with `fetchBatchSize`: firing one loads the whole batch in one query.
final class FaultBatch {
    let ids: [ManagedObjectID]
    var isLoaded = false
    init(ids: [ManagedObjectID]) { self.ids = ids }
}
