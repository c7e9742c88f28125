import Foundation

extension ManagedObject {
    // MARK: Reading

    /// Fires the fault if the object is one. Throws when its row has been deleted and the context's
    /// `shouldDeleteInaccessibleFaults` is false (semantics §4).
    public func materialize() throws {
        return try Probe.call(.readValue(self, key: "", how: "materialize")) { try performMaterialize() }
    }

    private func performMaterialize() throws {
        guard isFaultFlag else { return }
        // The context is not retained for the call: the app holds it while it uses its objects on its queue, and
        // `fulfillFault` calls app code (`awakeFromFetch`) last, touching nothing of the context after it.
        if try withContext({ try $0.fulfillFault(self) }) != nil { return }
        if let orphanSource { return try fulfillOrphan(orphanSource) }
        throw ObjectGraphError(.referentialIntegrity, "the object is not registered in a context", entity: entity.name, objectID: objectID)
    }

    /// Rule 2 (recorded on Apple): an object its context dropped at reset() is a fault without a
    /// context; touching it reads its row from the store (the row cache when fresh), and it stays without a
    /// context. With ``ManagedObjectContext/orphanedFaultsFailToFire`` it fails instead.
    private func fulfillOrphan(_ source: OrphanSource) throws {
        guard let coordinator = source.coordinator, !objectID.isTemporaryID,
              let row = try coordinator.row(for: objectID, staleness: source.stalenessInterval) else {
            throw ObjectGraphError(.referentialIntegrity, "CoreData could not fulfill a fault: the object's context was reset and it has no row to read",
                                   entity: entity.name, objectID: objectID)
        }
        fill(from: row)
        awakeFromFetch()
    }

    private func willAccess() {
        withContext { $0.assertOnQueue() }
        guard isFaultFlag else { return }
        do { try materialize() } catch {
            preconditionFailure("CoreData could not fulfill a fault: \(error)")
        }
    }

    func ref(_ key: String) -> EntityDescription.PropertyRef? { entity.propertyRef(key) }

    /// The value of a property: an attribute's Swift value, a to-one's object, a to-many's `Set<ManagedObject>`.
    /// Fires the fault. A key that is not a property of the entity traps, as Core Data's `valueForKey:` raises;
    /// ``checkedValue(forKey:)`` throws instead.
    public func value(forKey key: String) -> Any? {
        return Probe.call(.readValue(self, key: key, how: "value"), result: { .value($0) }) { performValue(forKey: key) }
    }

    private func performValue(forKey key: String) -> Any? {
        do { return try checkedValue(forKey: key) } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The value of a property, throwing for an unknown key or a fault whose row is gone.
    public func checkedValue(forKey key: String) throws -> Any? {
        return try Probe.call(.readValue(self, key: key, how: "checked"), result: { .value($0) }) { try performCheckedValue(forKey: key) }
    }

    private func performCheckedValue(forKey key: String) throws -> Any? {
        guard let ref = ref(key) else {
            throw ObjectGraphError(.validation, "no property named \(key)", entity: entity.name, objectID: objectID, property: key)
        }
        Probe.count(.propertyRead)
        withContext { $0.assertOnQueue() }
        switch ref {
        case .transient(let i):
            return entity.transientAttributes[i].appValue(transients[i])
        case .transientRelationship(let i):
            return transientRelationshipValue(i)
        case .attribute(let slot):
            try materialize()
            guard case .attribute(let a) = entity.slots[slot] else { return nil }
            return a.appValue(values[slot])
        case .toOne(let slot):
            try materialize()
            return toOneObject(slot)
        case .toMany(let index):
            if entity.hasOrderedToMany, entity.toManyIsOrdered[index] { return try orderedObjects(index) }
            let ids = try relatedIDs(index)
            guard let context = managedObjectContext else { return Set<ManagedObject>() }
            let key = Self.heldToManyOffset + index
            if let held = heldObjects?.many(key), held.count == ids.count, held.allSatisfy({ ids.contains($0.objectID) }) { return Set(held) }
            let objects = ids.map { context.object(with: $0) }
            hold(many: objects, at: key)
            return Set(objects)
        }
    }

    /// The object of a to-one slot of a loaded object, held strongly once read.
    private func toOneObject(_ slot: Int) -> ManagedObject? {
        guard case .objectID(let id) = values[slot] else { return nil }
        if let held = heldObjects?.one(slot), held.objectID == id { return held }
        guard let object = withContext({ $0.object(with: id) }) else { return nil }
        hold(one: object, at: slot)
        return object
    }

    // MARK: Typed access for @Managed (no key-value boxing)

    /// ``value(forKey:)`` read as `Value`, the way a ``Managed`` property of that type reads it: an attribute of
    /// a common type (string, number, date, Boolean, optional or not) or a to-one comes back without boxing the
    /// value in `Any`; anything else goes through ``value(forKey:)`` and converts as ``Managed`` does (an
    /// ``AttributeConvertible`` type never fails; another type that does not match traps, with a message).
    @inlinable
    public final func value<Value>(forKey key: String, as type: Value.Type) -> Value {
        ManagedValueBridge<Value>.read(self, key)
    }

    /// What ``Managed`` reads for a key without boxing: an attribute's stored value with its type, or a to-one's
    /// object; `other` sends the caller to ``value(forKey:)`` (to-manys, transients, nil to-ones, unknown keys,
    /// faults that cannot be fulfilled), which behaves, and traps, as documented there.
    @usableFromInline enum _ManagedRead {
        case attribute(PropertyValue, AttributeType)
        case toOne(ManagedObject)
        case other
    }

    /// The value of `key` as ``value(forKey:)`` finds it (same queue check, same fault firing), unboxed.
    @usableFromInline func _managedRead(forKey key: String) -> _ManagedRead {
        guard let ref = ref(key) else { return .other }
        switch ref {
        case .attribute(let slot):
            withContext { $0.assertOnQueue() }
            if isFaultFlag { do { try materialize() } catch { return .other } }
            guard let type = entity.slotAttributeTypes[slot] else { return .other }
            return .attribute(values[slot], type)
        case .toOne(let slot):
            withContext { $0.assertOnQueue() }
            if isFaultFlag { do { try materialize() } catch { return .other } }
            guard let object = toOneObject(slot) else { return .other }
            return .toOne(object)
        case .toMany, .transient, .transientRelationship:
            return .other
        }
    }

    /// Sets an attribute from a value already in its storage form for the attribute's type (what
    /// ``setValue(_:forKey:)`` would store for the Swift value), with the same queue check, fault firing and
    /// change tracking; false, having done nothing, when the key or the value's form does not fit: the caller
    /// then goes through ``setValue(_:forKey:)``.
    @usableFromInline func _managedSet(_ value: PropertyValue, forKey key: String) -> Bool {
        guard case .attribute(let slot)? = ref(key), let type = entity.slotAttributeTypes[slot] else { return false }
        switch (value, type) {
        case (.double, .double), (.string, .string), (.date, .date), (.bool, .boolean): break
        case (.integer(let v), .integer16), (.integer(let v), .integer32), (.integer(let v), .integer64):
            guard type.integerRange.contains(v) else { return false }
        default: return false
        }
        withContext { $0.assertOnQueue() }
        if isFaultFlag { do { try materialize() } catch { return false } }
        setSlot(slot, value)
        return true
    }

    /// Sets a to-one relationship to `object` as ``setValue(_:forKey:)`` does (inverse maintenance included);
    /// false, having done nothing, when `key` is not a to-one.
    @usableFromInline func _managedSetToOne(_ object: ManagedObject, forKey key: String) -> Bool {
        guard case .toOne(let slot)? = ref(key) else { return false }
        withContext { $0.assertOnQueue() }
        do { try setToOne(slot: slot, key: key, target: object) } catch {
            preconditionFailure("\(error)")
        }
        return true
    }

    /// The raw stored value of a persistent attribute or to-one (an object ID), firing the fault.
    public func primitiveValue(forKey key: String) -> PropertyValue {
        return Probe.call(.readValue(self, key: key, how: "primitive"), result: { .value($0) }) { performPrimitiveValue(forKey: key) }
    }

    private func performPrimitiveValue(forKey key: String) -> PropertyValue {
        willAccess()
        switch ref(key) {
        case .attribute(let slot)?, .toOne(let slot)?: return values[slot]
        case .transient(let i)?: return transients[i]
        default: return .null
        }
    }

    /// The IDs of a to-many relationship's destinations, loading the relationship fault (one query).
    public func objectIDs(forRelationshipNamed key: String) throws -> Set<ManagedObjectID> {
        guard case .toMany(let index)? = ref(key) else {
            throw ObjectGraphError(.validation, "\(key) is not a to-many relationship", entity: entity.name, objectID: objectID, property: key)
        }
        return try relatedIDs(index)
    }

    func relatedIDs(_ index: Int) throws -> Set<ManagedObjectID> {
        if let state = toMany[index] { return state.current }
        guard let context = managedObjectContext else { return [] }
        try context.fulfillToMany(self, index: index)
        return toMany[index]?.current ?? []
    }

    // MARK: Writing

    /// Sets a property with change tracking and inverse maintenance.
    /// - Throws: ``ObjectGraphError`` (1550) naming entity, object and property when the key is unknown or
    ///   the value's type does not fit; 133010 when a related object is in another context.
    public func setValue(_ value: Any?, forKey key: String) throws {
        return try Probe.call(.setValue(self, key: key, value: value)) { try performSetValue(value, forKey: key) }
    }

    private func performSetValue(_ value: Any?, forKey key: String) throws {
        guard let ref = ref(key) else {
            throw ObjectGraphError(.validation, "no property named \(key)", entity: entity.name, objectID: objectID, property: key)
        }
        Probe.count(.propertySet)
        withContext { $0.assertOnQueue() }
        switch ref {
        case .transient(let i):
            let a = entity.transientAttributes[i]
            guard let v = a.storedValue(value) else { throw typeError(key, value, expected: a.type.rawValue) }
            setTransient(i, v)
        case .attribute(let slot):
            guard case .attribute(let a) = entity.slots[slot] else { return }
            if a.type == .transformable { return try setTransformable(slot, a, value) }
            guard let v = PropertyValue.from(value, attributeType: a.type) else { throw typeError(key, value, expected: a.type.rawValue) }
            try materialize()
            setSlot(slot, v)
        case .toOne(let slot):
            let target: ManagedObject?
            switch value {
            case nil: target = nil
            case let object as ManagedObject: target = object
            default: throw typeError(key, value, expected: "a managed object")
            }
            try setToOne(slot: slot, key: key, target: target)
        case .toMany(let index):
            if entity.hasOrderedToMany, entity.toManyIsOrdered[index] {
                // §12.3: an array sets the order; a set, members in a stable order (no order to keep).
                let ordered: [ManagedObject]
                switch value {
                case nil: ordered = []
                case let array as [ManagedObject]: ordered = array
                case let set as Set<ManagedObject>:
                    let byID = Dictionary(set.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
                    ordered = ToManyState.sorted(byID.keys).compactMap { byID[$0] }
                default: throw typeError(key, value, expected: "an array of managed objects")
                }
                return try setOrderedToMany(index: index, key: key, objects: ordered)
            }
            let targets: Set<ManagedObject>
            switch value {
            case nil: targets = []
            case let set as Set<ManagedObject>: targets = set
            case let array as [ManagedObject]: targets = Set(array)
            default: throw typeError(key, value, expected: "a set of managed objects")
            }
            try setToMany(index: index, key: key, targets: targets)
        case .transientRelationship(let index):
            let targets: [ManagedObject]
            switch value {
            case nil: targets = []
            case let object as ManagedObject: targets = [object]
            case let set as Set<ManagedObject>: targets = Array(set)
            case let array as [ManagedObject]: targets = array
            default: throw typeError(key, value, expected: "a managed object or a set of them")
            }
            if !entity.transientRelationships[index].isToMany, targets.count > 1 {
                throw typeError(key, value, expected: "one managed object")
            }
            try setTransientRelationship(index, key: key, targets: targets)
        }
    }

    // MARK: Transient relationships (Rule 21.2)

    /// The IDs a transient relationship holds.
    func transientLink(_ index: Int) -> Set<ManagedObjectID> {
        transientLinks.isEmpty ? [] : transientLinks[index]
    }

    /// A transient relationship's value: its object (to-one) or set of objects (to-many), held strongly as a
    /// stored relationship's are (Rule 1).
    private func transientRelationshipValue(_ index: Int) -> Any? {
        let isToMany = entity.transientRelationships[index].isToMany
        let ids = transientLink(index)
        guard let context = managedObjectContext, !ids.isEmpty else { return isToMany ? Set<ManagedObject>() : nil }
        let objects = ids.map { context.object(with: $0) }
        hold(many: objects, at: Self.heldTransientOffset + index)
        return isToMany ? Set(objects) : objects.first
    }

    /// Sets a transient relationship with inverse maintenance, as a stored one: a change to it is a change of the
    /// object (Rule 3), and writes nothing.
    private func setTransientRelationship(_ index: Int, key: String, targets: [ManagedObject]) throws {
        for t in targets { try checkSameContext(t, key) }
        let newIDs = Set(targets.map(\.objectID))
        let old = transientLink(index)
        guard old != newIDs else { return }
        storeTransientLink(index, newIDs)
        hold(many: targets, at: Self.heldTransientOffset + index)
        guard let context = managedObjectContext else { return }
        let inverse = entity.transientRelationshipTargets[index].inverse
        // Sorted: the order of inverse changes reaches the undo records, which must not follow a set's order.
        for id in old.subtracting(newIDs).sorted(by: { $0.description < $1.description }) {
            context.object(with: id).transientLinkRemove(inverse, objectID)
        }
        for target in targets where !old.contains(target.objectID) {
            if !target.entity.transientRelationships[inverse].isToMany {
                // The target's previous owner loses it (one-to-one, one-to-many).
                for previous in target.transientLink(inverse) where previous != objectID {
                    context.object(with: previous).transientLinkRemove(index, target.objectID)
                }
                target.storeTransientLink(inverse, [objectID])
                target.hold(many: [self], at: Self.heldTransientOffset + inverse)
            } else {
                target.transientLinkAdd(inverse, self)
            }
        }
    }

    func storeTransientLink(_ index: Int, _ ids: Set<ManagedObjectID>) {
        withContext { $0.noteWillChange(self) }
        if transientLinks.isEmpty { transientLinks = Array(repeating: [], count: entity.transientRelationships.count) }
        transientLinks[index] = ids
        transientsChanged = true
        withContext { $0.noteChange(self) }
    }

    /// Removes `id` from a transient relationship (no further inverse maintenance).
    func transientLinkRemove(_ index: Int, _ id: ManagedObjectID) {
        var ids = transientLink(index)
        guard ids.remove(id) != nil else { return }
        storeTransientLink(index, ids)
        heldObjects?.prune(toMany: Self.heldTransientOffset + index) { $0 != id }
    }

    private func transientLinkAdd(_ index: Int, _ object: ManagedObject) {
        var ids = transientLink(index)
        guard ids.insert(object.objectID).inserted else { return }
        storeTransientLink(index, ids)
        if heldObjects == nil { heldObjects = HeldObjects() }
        heldObjects!.add(object, toMany: Self.heldTransientOffset + index)
    }

    /// Sets a raw value without inverse maintenance (`setPrimitiveValue(_:forKey:)`); changes are tracked.
    public func setPrimitiveValue(_ value: PropertyValue, forKey key: String) throws {
        switch ref(key) {
        case .attribute(let slot)?:
            guard case .attribute(let a) = entity.slots[slot] else { return }
            guard let v = value.converted(to: a.type) else { throw typeError(key, value, expected: a.type.rawValue) }
            try materialize()
            setSlot(slot, v)
        case .toOne(let slot)?:
            try materialize()
            setSlot(slot, value)
        case .transient(let i)?:
            setTransient(i, value)
        default:
            throw ObjectGraphError(.validation, "no attribute or to-one named \(key)", entity: entity.name, objectID: objectID, property: key)
        }
    }

    /// Stores a transient value; a change makes the object updated (Rule 3), and writes nothing.
    private func setTransient(_ index: Int, _ value: PropertyValue) {
        guard transients[index] != value else { return }
        withContext { $0.noteWillChange(self) }
        transients[index] = value
        transientsChanged = true
        withContext { $0.noteChange(self) }
    }

    /// Holds the object of a to-one slot strongly (as read).
    func hold(one object: ManagedObject, at slot: Int) {
        if heldObjects == nil { heldObjects = HeldObjects() }
        heldObjects!.hold(one: object, at: slot)
    }

    /// Holds the objects of a to-many (at its offset key) strongly (as read).
    func hold(many objects: [ManagedObject], at key: Int) {
        if heldObjects == nil { heldObjects = HeldObjects() }
        heldObjects!.hold(many: objects, at: key)
    }

    private func typeError(_ key: String, _ value: Any?, expected: String) -> ObjectGraphError {
        ObjectGraphError(.validation, "wrong type: \(type(of: value as Any)) value \(String(describing: value ?? "nil")) for a property of type \(expected)",
                         entity: entity.name, objectID: objectID, property: key)
    }

    /// Stores a value in a slot and keeps the changed set exact against the committed snapshot.
    func setSlot(_ slot: Int, _ value: PropertyValue) {
        if values[slot] == value { return }
        withContext { $0.noteWillChange(self) }
        // An object filled from a row shares its values with its snapshot (and the row cache): the first change
        // copies them. Copied here by a loop specialized for `PropertyValue` rather than by the array's
        // copy-on-write, which copies through the runtime's generic array copy (a value-witness call per
        // element): 0.57k instructions per object of an update, 0.48k this way (most of it the allocation).
        if let original, Self.sameBuffer(values, original.values) { values = Self.copy(of: values) }
        values[slot] = value
        if heldObjects != nil { heldObjects!.remove(slot) }
        eventChangedSlots.insert(slot)
        if isInsertedFlag {
            changedSlots.insert(slot)
        } else if let original, original.values[slot] == value {
            changedSlots.remove(slot)
        } else {
            changedSlots.insert(slot)
        }
        withContext { $0.noteChange(self) }
    }

    /// Whether two value arrays are one buffer (not just equal).
    @inline(__always)
    private static func sameBuffer(_ a: [PropertyValue], _ b: [PropertyValue]) -> Bool {
        a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress && a.count == b.count } }
    }

    /// A copy of `values` in a new buffer of its own.
    private static func copy(of values: [PropertyValue]) -> [PropertyValue] {
        var copy: [PropertyValue] = []
        copy.reserveCapacity(values.count)
        for value in values { copy.append(value) }
        return copy
    }

    /// Adds `object` to the to-many relationship `key`, keeping the inverse.
    public func addObject(_ object: ManagedObject, toRelationship key: String) throws {
        guard case .toMany(let index)? = ref(key) else {
            throw ObjectGraphError(.validation, "\(key) is not a to-many relationship", entity: entity.name, objectID: objectID, property: key)
        }
        var targets = Set(try relatedIDs(index))
        guard !targets.contains(object.objectID) else { return }
        targets.insert(object.objectID)
        try setToMany(index: index, key: key, targetIDs: targets, added: [object], removed: [])
    }

    /// Removes `object` from the to-many relationship `key`, keeping the inverse.
    public func removeObject(_ object: ManagedObject, fromRelationship key: String) throws {
        guard case .toMany(let index)? = ref(key) else {
            throw ObjectGraphError(.validation, "\(key) is not a to-many relationship", entity: entity.name, objectID: objectID, property: key)
        }
        var targets = try relatedIDs(index)
        guard targets.remove(object.objectID) != nil else { return }
        try setToMany(index: index, key: key, targetIDs: targets, added: [], removed: [object])
    }

    private func checkSameContext(_ other: ManagedObject, _ key: String) throws {
        guard other.isInSameContext(as: self) else {
            throw ObjectGraphError(.externalRelationship, "the destination object \(other.objectID) is in another context",
                                   entity: entity.name, objectID: objectID, property: key)
        }
    }

    private func setToOne(slot: Int, key: String, target: ManagedObject?) throws {
        if let target { try checkSameContext(target, key) }
        try materialize()
        let oldID: ManagedObjectID? = { if case .objectID(let id) = values[slot] { return id } else { return nil } }()
        if oldID == target?.objectID { return }
        guard let inverse = entity.slotInverses[slot], let context = managedObjectContext else {
            setSlot(slot, target.map { .objectID($0.objectID) } ?? .null)
            // Rule 1: a relationship holds its target strongly, as Core Data's objects do.
            if let target { hold(one: target, at: slot) }
            return
        }
        if let oldID { try context.object(with: oldID).inverseRemove(inverse, objectID) }
        if let target, case .toOne(let inverseSlot) = inverse {
            // One-to-one: the target's previous owner loses it.
            try target.materialize()
            if case .objectID(let previous) = target.values[inverseSlot], previous != objectID {
                let previousOwner = context.object(with: previous)
                try previousOwner.materialize()
                previousOwner.setSlot(slot, .null)
            }
        }
        setSlot(slot, target.map { .objectID($0.objectID) } ?? .null)
        if let target {
            hold(one: target, at: slot)
            try target.inverseAdd(inverse, objectID, object: self)
        }
    }

    /// Sets an ordered relationship to `objects` in that order, keeping the inverses (§12.3): an object given
    /// twice keeps its first place, as an `NSOrderedSet` does.
    func setOrderedToMany(index: Int, key: String, objects: [ManagedObject]) throws {
        var seen = Set<ManagedObjectID>()
        let unique = objects.filter { seen.insert($0.objectID).inserted }
        try setToMany(index: index, key: key, targets: Set(unique))
        setOrderedIDs(index, unique.map(\.objectID))
        hold(many: unique, at: Self.heldToManyOffset + index)
    }

    private func setToMany(index: Int, key: String, targets: Set<ManagedObject>) throws {
        for t in targets { try checkSameContext(t, key) }
        let current = try relatedIDs(index)
        let newIDs = Set(targets.map(\.objectID))
        guard let context = managedObjectContext else { return }
        let added = targets.filter { !current.contains($0.objectID) }
        let removed = current.subtracting(newIDs).map { context.object(with: $0) }
        try setToMany(index: index, key: key, targetIDs: newIDs, added: Array(added), removed: removed)
        hold(many: Array(targets), at: Self.heldToManyOffset + index)
    }

    private func setToMany(index: Int, key: String, targetIDs: Set<ManagedObjectID>, added: [ManagedObject], removed: [ManagedObject]) throws {
        for t in added { try checkSameContext(t, key) }
        guard let (_, inverse) = entity.relationshipTargets[key] else { return }
        setToManyIDs(index, targetIDs)
        // Rule 1: the relationship holds the objects added to it.
        if !added.isEmpty {
            if heldObjects == nil { heldObjects = HeldObjects() }
            for a in added { heldObjects!.add(a, toMany: Self.heldToManyOffset + index) }
        }
        for r in removed { try r.inverseRemove(inverse, objectID) }
        for a in added {
            if case .toOne(let inverseSlot) = inverse {
                // The added object leaves its previous owner's to-many.
                try a.materialize()
                if case .objectID(let previous) = a.values[inverseSlot], previous != objectID, let context = managedObjectContext {
                    let previousOwner = context.object(with: previous)
                    var next = try previousOwner.relatedIDs(index)
                    if next.remove(a.objectID) != nil { previousOwner.setToManyIDs(index, next) }
                }
            }
            try a.inverseAdd(inverse, objectID, object: self)
        }
    }

    func setToManyIDs(_ index: Int, _ ids: Set<ManagedObjectID>) {
        // The objects still in the relationship stay held (Rule 1); the others go.
        if heldObjects != nil { heldObjects!.prune(toMany: Self.heldToManyOffset + index) { ids.contains($0) } }
        if var state = toMany[index] {
            guard state.current != ids else { return }
            withContext { $0.noteWillChange(self) }
            state.current = ids
            state.reconcileOrder()
            toMany[index] = state
        } else {
            toMany[index] = entity.hasOrderedToMany && entity.toManyIsOrdered[index]
                ? ToManyState(stored: ToManyState.sorted(ids)) : ToManyState(current: ids, original: ids)
            return
        }
        withContext { $0.noteChange(self) }
    }

    /// Sets a loaded ordered relationship's members in order (Docs/coredata-behaviour.md §12.3): a change of order
    /// alone is a change of the object. `ids` holds no ID twice.
    func setOrderedIDs(_ index: Int, _ ids: [ManagedObjectID]) {
        guard var state = toMany[index], state.order != nil, state.order!.current != ids else { return }
        let members = Set(ids)
        if heldObjects != nil { heldObjects!.prune(toMany: Self.heldToManyOffset + index) { members.contains($0) } }
        withContext { $0.noteWillChange(self) }
        state.setOrdered(ids)
        toMany[index] = state
        withContext { $0.noteChange(self) }
    }

    /// Removes `id` from the inverse side `inverse` of this object (no further inverse maintenance).
    func inverseRemove(_ inverse: EntityDescription.PropertyRef, _ id: ManagedObjectID) throws {
        switch inverse {
        case .toOne(let slot):
            try materialize()
            if values[slot] == .objectID(id) { setSlot(slot, .null) }
        case .toMany(let index):
            if notePendingInverse(index, id, added: false) { return }
            if try updateLoadedToMany(index, { $0.remove(id) != nil }, held: { $0.prune(toMany: Self.heldToManyOffset + index) { $0 != id } }) { return }
            var ids = try relatedIDs(index)
            if ids.remove(id) != nil { setToManyIDs(index, ids) }
        default: break
        }
    }

    /// Adds `id` on the inverse side `inverse` of this object (no further inverse maintenance); `object`, the
    /// object of `id` when the caller has it, is then held by the relationship (Rule 1).
    func inverseAdd(_ inverse: EntityDescription.PropertyRef, _ id: ManagedObjectID, object: ManagedObject? = nil) throws {
        switch inverse {
        case .toOne(let slot):
            try materialize()
            setSlot(slot, .objectID(id))
            if let object { hold(one: object, at: slot) }
        case .toMany(let index):
            if notePendingInverse(index, id, added: true) { return }
            let key = Self.heldToManyOffset + index
            if try updateLoadedToMany(index, { $0.insert(id).inserted }, held: { held in if let object { held.add(object, toMany: key) } }) { return }
            var ids = try relatedIDs(index)
            if ids.insert(id).inserted {
                setToManyIDs(index, ids)
                if let object {
                    if heldObjects == nil { heldObjects = HeldObjects() }
                    heldObjects!.add(object, toMany: key)
                }
            }
        default: break
        }
    }

    /// Records an inverse change to an unloaded one-to-many (its destinations hold the foreign key) without
    /// loading it; the object counts as updated, as when the relationship is loaded. Only in contexts that save
    /// to a coordinator: a child's save pushes loaded relationships to its parent.
    private func notePendingInverse(_ index: Int, _ id: ManagedObjectID, added: Bool) -> Bool {
        // §12.4: an ordered relationship loads, so that an object added from the inverse side takes its place at
        // the end of the order the store holds.
        guard toMany[index] == nil, !objectID.isTemporaryID, let context = managedObjectContext, context.parent == nil,
              entity.toManyInverseIsToOne[index], !(entity.hasOrderedToMany && entity.toManyIsOrdered[index]) else { return false }
        context.noteWillChange(self)
        if pendingToMany == nil { pendingToMany = Array(repeating: PendingToManyLog(), count: toMany.count) }
        pendingToMany![index].append(id, added: added)  // in place: the log stays uniquely referenced
        if heldObjects != nil { heldObjects!.remove(Self.heldToManyOffset + index) }
        context.noteChange(self)
        return true
    }

    /// Changes a loaded to-many's current IDs in place, as ``setToManyIDs(_:_:)`` would with the changed set,
    /// without copying the set per change (inverse maintenance of a one-to-many during an import). Loads the
    /// relationship fault first; false when it stays unloaded (no context), for the caller's general path.
    private func updateLoadedToMany(_ index: Int, _ change: (inout Set<ManagedObjectID>) -> Bool, held: (inout HeldObjects) -> Void) throws -> Bool {
        _ = try relatedIDs(index)
        guard var state = toMany[index] else { return false }
        withContext { $0.noteWillChange(self) }
        toMany[index] = nil  // the state's set is now uniquely referenced: the change happens in place
        let changed = change(&state.current)
        if changed, state.order != nil { state.reconcileOrder() }
        toMany[index] = state
        if changed {
            // The held objects follow the change in place (Rule 1), not dropped and listed again.
            if heldObjects == nil { heldObjects = HeldObjects() }
            held(&heldObjects!)
            withContext { $0.noteChange(self) }
        }
        return true
    }

    // MARK: Changes

    /// The changed persistent properties with their new values (semantics §1.5 `changedValues`).
    public func changedValues() -> [String: Any] {
        return Probe.call(.readValue(self, key: "", how: "changedValues")) { performChangedValues() }
    }

    private func performChangedValues() -> [String: Any] {
        if let pending = pendingToMany { for index in pending.indices where !pending[index].isEmpty { _ = try? relatedIDs(index) } }
        var result: [String: Any] = [:]
        for slot in changedSlots {
            let name = entity.slots[slot].name
            result[name] = anyValue(slot) ?? NSNull()
        }
        for (i, state) in toMany.enumerated() {
            if let state, state.isChanged, let context = managedObjectContext {
                // §12.3: an ordered relationship's new value is its objects in order.
                result[entity.toManyRelationships[i].name] = state.order.map { $0.current.map { context.object(with: $0) } as Any }
                    ?? Set(state.current.map { context.object(with: $0) })
            }
        }
        return result
    }

    /// The persistent properties changed since the last objects-did-change notification, with their new values
    /// (`changedValuesForCurrentEvent()`).
    public func changedValuesForCurrentEvent() -> [String: Any] {
        var result: [String: Any] = [:]
        for slot in eventChangedSlots where slot < values.count { result[entity.slots[slot].name] = anyValue(slot) ?? NSNull() }
        return result
    }

    /// The committed values of `keys` (nil: every persistent attribute and to-one), to-ones as object IDs.
    public func committedValues(forKeys keys: [String]?) -> [String: Any] {
        guard let original else { return [:] }
        var result: [String: Any] = [:]
        for (slot, s) in entity.slots.enumerated() where keys == nil || keys!.contains(s.name) {
            result[s.name] = appValue(slot, original.values[slot]) ?? NSNull()
        }
        return result
    }

    func attributeType(_ slot: Int) -> AttributeType? {
        if case .attribute(let a) = entity.slots[slot] { return a.type }
        return nil
    }

    private func anyValue(_ slot: Int) -> Any? {
        appValue(slot, values[slot])
    }
}

// MARK: - ObjectPredicate evaluation against objects

extension ManagedObject: PredicateSubject {
    package var selfValue: PropertyValue { .objectID(objectID) }

    package func resolve(keyPath: [Substring]) throws -> KeyPathValue {
        try resolvePath(keyPath[...])
    }

    private func resolvePath(_ path: ArraySlice<Substring>) throws -> KeyPathValue {
        guard let first = path.first else { return .single(.objectID(objectID)) }
        let key = String(first)
        guard let ref = ref(key) else {
            throw ObjectGraphError(.invalidFetchRequest, "keypath \(key) not found in entity \(entity.name)", entity: entity.name, property: key)
        }
        switch ref {
        case .transient(let i): return .single(transients[i])
        case .transientRelationship(let index):
            let ids = transientLink(index)
            let isToMany = entity.transientRelationships[index].isToMany
            if path.count == 1 {
                return isToMany ? .many(ids.map { .objectID($0) }) : .single(ids.first.map { .objectID($0) } ?? .null)
            }
            guard let context = managedObjectContext else { return isToMany ? .many([]) : .single(.null) }
            var values: [PropertyValue] = []
            for id in ids {
                switch try context.object(with: id).resolvePath(path.dropFirst()) {
                case .single(let v): values.append(v)
                case .many(let vs): values.append(contentsOf: vs)
                }
            }
            return isToMany ? .many(values) : .single(values.first ?? .null)
        case .attribute(let slot):
            try materialize()
            return .single(values[slot])
        case .toOne(let slot):
            try materialize()
            guard case .objectID(let id) = values[slot] else { return .single(.null) }
            if path.count == 1 { return .single(.objectID(id)) }
            guard let context = managedObjectContext else { return .single(.null) }
            return try context.object(with: id).resolvePath(path.dropFirst())
        case .toMany(let index):
            let ids = try relatedIDs(index)
            if path.count == 1 { return .many(ids.map { .objectID($0) }) }
            guard let context = managedObjectContext else { return .many([]) }
            var values: [PropertyValue] = []
            for id in ids {
                switch try context.object(with: id).resolvePath(path.dropFirst()) {
                case .single(let v): values.append(v)
                case .many(let vs): values.append(contentsOf: vs)
                }
            }
            return .many(values)
        }
    }

    /// The value of a key path for sorting (to-one paths only).
    func sortValue(_ keyPath: String) throws -> PropertyValue {
        if case .single(let v) = try resolve(keyPath: keyPath.split(separator: ".")) { return v }
        return .null
    }
}
