import Foundation

extension ManagedObjectContext {
    /// Saves the context's changes to its parent store (semantics §2.1, §2.2).
    ///
    /// To a coordinator: delete rules, will-save, validation, permanent IDs, conflict detection at both layers
    /// resolved by ``mergePolicy``, one store transaction, then snapshots, `didSave` and the did-save
    /// notifications. To a parent context: the changes become the parent's pending changes; no I/O, no
    /// conflict detection, IDs stay temporary.
    /// - Throws: validation errors (15xx, 1560 for several), 133020 / 133021 with the conflict list, store
    ///   errors naming the file. After a failure nothing is written and the context keeps its changes.
    public func save() throws {
        let insertedBeforeSave = Probe.recordsCall ? insertedSet.map { ($0, $0.objectID) } : []
        try Probe.call(.save(self), result: { _ in .saved(insertedBeforeSave.map { ($0.1, $0.0.objectID) }) }) { try performSave() }
    }

    private func performSave() throws {
        assertOnQueue()
        precondition(!isSaving, "ObjectGraph: save() called re-entrantly from a save (willSave or an observer)")
        isSaving = true
        defer { isSaving = false }
        processPendingChanges()
        dropFaultedInserts()
        guard hasChanges else {
            // Recorded on Apple: a save with nothing to save still posts will-save and did-save,
            // with empty sets; it calls no object's willSave or didSave and reaches no store.
            Probe.posting(.willSave) { NotificationCenter.default.post(name: Self.willSaveNotification, object: self) }
            postDidSave(inserted: [], updated: [], deleted: [])
            return
        }
        if let saveRefusal, let error = saveRefusal(self) { throw error }
        Probe.posting(.willSave) { NotificationCenter.default.post(name: Self.willSaveNotification, object: self) }
        // The three change sets are disjoint (an insert never joins the updated set; a delete leaves both), so
        // each object is called once without building their union; iterated as they were before any willSave
        // (the copies keep their members alive whatever willSave does to the context's sets).
        let (inserted, updated, deleted) = (insertedSet, updatedSet, deletedSet)
        inserted.forEachUnretained { $0.willSave() }
        updated.forEachUnretained { $0.willSave() }
        deleted.forEachUnretained { $0.willSave() }
        processPendingChanges()
        // Rule 21.3: the event's changes (willSave's included) are registered; what the save does next
        // (conflict resolution, snapshots) is not undoable.
        undoCaptureSuppressed += 1
        defer { undoCaptureSuppressed -= 1 }
        try validateChanges()
        if let parent {
            try pushToParent(parent)
        } else {
            try saveToCoordinator()
        }
    }

    /// Rule 12: an insert turned into a fault by refresh(_:mergeChanges: false) has no values left to
    /// write (and fires as an inaccessible fault, reading as deleted): the save drops it, as a rollback would,
    /// and writes nothing for it (Docs/core-data-rules.md).
    private func dropFaultedInserts() {
        guard hasFaultedInserts else { return }
        hasFaultedInserts = false
        // A deleted insert leaves the inserted set (delete(_:)): one still in it was an inaccessible fault.
        for object in insertedSet where object.isFaultFlag || object.isDeletedFlag {
            insertedSet.remove(object)
            pendingInserted.remove(object)
            object.isInsertPending = false
            object.isInsertedFlag = false
            object.isDeletedFlag = false
            unregister(object)
        }
    }

    private func validateChanges() throws {
        var errors: [ObjectGraphError] = []
        func collect(_ body: () throws -> Void) {
            do { try body() } catch let error as ObjectGraphError {
                if error.code == .multipleErrors { errors.append(contentsOf: error.detailedErrors) } else { errors.append(error) }
            } catch {
                errors.append(ObjectGraphError(.validation, "\(error)"))
            }
        }
        // Each set as it is when its walk starts (a validation method may change objects, and so the sets); the
        // copy walked keeps its members alive.
        // Walked in memory order (a large save's objects, a cache miss each in the sets' hash order); Core Data
        // documents no order for these calls, and the errors are put in a stable one below.
        let inserted = insertedSet
        inserted.forEachInMemoryOrder { object in collect { try object.validateForInsert() } }
        let updated = updatedSet
        updated.forEachInMemoryOrder { object in collect { try object.validateForUpdate() } }
        let deleted = deletedSet
        deleted.forEachUnretained { object in if !object.isInsertedFlag { collect { try object.validateForDelete() } } }
        // A 1560 error lists its details by entity, object (in key order) and property, not in the order the
        // objects were walked (their sets' order, or their addresses'): the same save fails the same way each run.
        errors.sort { a, b in
            switch (a.objectID, b.objectID) {
            case (nil, .some): return true
            case (.some, nil): return false
            case (.some(let x), .some(let y)) where x != y: return Self.keyOrder(x, y)
            default: return ((a.entityName ?? ""), (a.propertyName ?? ""), a.code.rawValue) < ((b.entityName ?? ""), (b.propertyName ?? ""), b.code.rawValue)
            }
        }
        try ManagedObject.throwCombined(errors)
    }

    /// Marks unchanged objects so that the next save checks their version too (`detectConflicts(for:)`).
    public func detectConflicts(for object: ManagedObject) {
        assertOnQueue()
        lockedObjects.insert(object)
    }

    // MARK: To a coordinator

    private func saveToCoordinator() throws {
        guard let coordinator = persistentStoreCoordinator else {
            throw ObjectGraphError(.persistentStoreOperation, "the context has no coordinator")
        }
        // Conflicts found, resolved, retried; a bounded loop since each resolution takes the newest version.
        var attempts = 0
        while true {
            attempts += 1
            let contextConflicts = try contextLevelConstraintConflicts()
            if !contextConflicts.isEmpty {
                // Semantics §1.3: optimistic-locking conflicts are found and resolved before uniqueness ones.
                var check = buildSaveRequest()
                check.checkVersionsOnly = true
                var lockingConflicts: [MergeConflict] = []
                if case .versionConflicts(let records) = try coordinator.save(check) {
                    lockingConflicts = records.compactMap { r in registry[r.id].map { MergeConflict(source: $0, record: r) } }
                }
                try mergePolicy.resolve(mergeConflicts: lockingConflicts, constraintConflicts: lockingConflicts.isEmpty ? contextConflicts : [])
                processPendingChanges()
                continue
            }
            // The request (an array per changed row) is freed as soon as the store wrote it, not after did-save:
            // the merges did-save starts on other queues then do not run beside the freeing of a large save.
            let outcome = try coordinator.save(buildSaveRequest())
            switch outcome {
            case .committed(let newIDs, let token, let savedRows):
                didCommit(newIDs: newIDs, coordinator: coordinator, historyToken: token, savedRows: savedRows)
                return
            case .versionConflicts(let records):
                var conflicts: [MergeConflict] = []
                for record in records {
                    guard let object = registry[record.id] else { continue }
                    conflicts.append(MergeConflict(source: object, record: record))
                }
                try mergePolicy.resolve(mergeConflicts: conflicts, constraintConflicts: [])
                processPendingChanges()
            case .constraintViolations(let violations):
                var conflicts: [ConstraintConflict] = []
                for v in violations {
                    guard let object = registry[v.id] else { continue }
                    let database = self.object(with: v.databaseID)
                    var values: [String: Any] = [:]
                    for (name, value) in zip(v.constraint, v.values) { values[name] = value.anyValue(for: v.entity.attribute(named: name)?.type) }
                    conflicts.append(ConstraintConflict(
                        constraint: v.constraint, values: values, databaseObject: database,
                        databaseSnapshot: MergeConflict.dictionary(v.entity, v.databaseRow.values), conflicting: [object]))
                }
                try mergePolicy.resolve(mergeConflicts: [], constraintConflicts: conflicts)
                processPendingChanges()
            }
            if attempts >= 16 {
                throw ObjectGraphError(.persistentStoreSave, "the save kept meeting new conflicts after \(attempts) attempts")
            }
            guard hasChanges else { return }
        }
    }

    /// Collisions on uniqueness constraints among the objects of this save (semantics §1.6, context level).
    private func contextLevelConstraintConflicts() throws -> [ConstraintConflict] {
        var conflicts: [ConstraintConflict] = []
        var candidates: [ManagedObject] = []
        // Entities with an insert or an update that changed a constrained value. The committed rows are unique
        // (the store enforces it at every save), so objects whose constrained values are all as committed
        // cannot collide with one another: a group without a new value has nothing to check (an import that
        // updates existing objects found by unique ID, which never changes that ID).
        // Groups are hierarchies (a constraint a parent declares holds across its sub-entities):
        // without inheritance each entity is its own root.
        var fresh: [ObjectIdentifier] = []
        func noteFresh(_ entity: EntityDescription) {
            let id = ObjectIdentifier(entity.rootEntity)
            if fresh.last != id, !fresh.contains(id) { fresh.append(id) }
        }
        // The groups with something new are found first, without collecting anything: a save without an insert
        // and without a changed constrained value (an update by unique ID) is done after one walk that reads
        // flags, instead of also copying every updated object into the candidates (a retain and a release each,
        // atomic operations; 0.4k instructions per object while registered objects had side tables, before
        // ``ObjectRegistry``).
        for object in insertedSet where !object.entity.constraintSlots.isEmpty && !object.isDeletedFlag {
            noteFresh(object.entity)
        }
        for object in updatedSet where !object.entity.constraintSlots.isEmpty && !object.isDeletedFlag
            && object.changedSlots.intersects(object.entity.constrainedValueSlots) {
            noteFresh(object.entity)
        }
        guard !fresh.isEmpty else { return [] }
        // Every object of a fresh group is a candidate, changed constrained value or not (§1.6: an insert onto the
        // unchanged ID of an updated object collides too).
        for object in insertedSet where !object.entity.constraintSlots.isEmpty && !object.isDeletedFlag {
            candidates.append(object)
        }
        for object in updatedSet where !object.entity.constraintSlots.isEmpty && !object.isDeletedFlag
            && fresh.contains(ObjectIdentifier(object.entity.rootEntity)) {
            candidates.append(object)
        }
        guard candidates.count > 1 else { return [] }
        let firstEntity = candidates[0].entity
        let groups = candidates.allSatisfy({ $0.entity === firstEntity })
            ? [candidates] : Array(Dictionary(grouping: candidates, by: { ObjectIdentifier($0.entity.rootEntity) }).values)
        for hierarchyGroup in groups where hierarchyGroup.count > 1 && fresh.contains(ObjectIdentifier(hierarchyGroup[0].entity.rootEntity)) {
            for (entity, n, group) in Self.constraintGroups(hierarchyGroup) where group.count > 1 {
                let slots = entity.constraintSlots[n]
                // The keys held by more than one object. A one-attribute constraint (the usual unique ID) is
                // keyed by the value itself: no array per object.
                let seen = slots.count == 1
                    ? Self.collisions(group) { object -> UniqueValue? in
                        let value = object.values[slots[0]]
                        return value.isNull ? nil : UniqueValue(value: value)
                    }
                    : Self.collisions(group) { object -> [PropertyValue]? in
                        let key = slots.map { object.values[$0] }
                        return key.contains(where: \.isNull) ? nil : key
                    }
                for objects in seen {
                    let key = slots.map { objects[0].values[$0] }
                    var values: [String: Any] = [:]
                    for (name, value) in zip(entity.uniquenessConstraints[n], key) { values[name] = value.anyValue(for: entity.attribute(named: name)?.type) }
                    conflicts.append(ConstraintConflict(
                        constraint: entity.uniquenessConstraints[n], values: values, databaseObject: nil, databaseSnapshot: nil,
                        conflicting: objects.sorted { $0.objectID.key < $1.objectID.key }))
                }
            }
        }
        return conflicts
    }

    /// The constraints to check among the objects of one hierarchy: each constraint once, on its declaring
    /// entity, with the objects of that entity and of those below it (semantics §1.6: an
    /// inherited constraint's violations make one report). Without inheritance: the entity's constraints over
    /// the whole group.
    private static func constraintGroups(_ objects: [ManagedObject]) -> [(entity: EntityDescription, index: Int, objects: [ManagedObject])] {
        let entity = objects[0].entity
        guard entity.isInHierarchy else { return entity.constraintSlots.indices.map { (entity, $0, objects) } }
        var result: [(entity: EntityDescription, index: Int, objects: [ManagedObject])] = []
        var entities: [EntityDescription] = []
        for object in objects where !entities.contains(where: { $0 === object.entity }) { entities.append(object.entity) }
        entities.sort { $0.entityNumber < $1.entityNumber }
        var done = Set<String>()
        for member in entities {
            for n in member.constraintSlots.indices {
                let declarer = member.constraintDeclarers[n]
                let constraintKey = "\(declarer.entityNumber):\(member.uniquenessConstraints[n].joined(separator: ","))"
                guard done.insert(constraintKey).inserted else { continue }
                result.append((member, n, objects.filter { $0.entity.isKindOf(entity: declarer) }))
            }
        }
        return result
    }

    /// A one-attribute constraint's value as a key: an integer (the usual unique ID) hashes as one word.
    private struct UniqueValue: Hashable {
        let value: PropertyValue
        func _rawHashValue(seed: Int) -> Int {
            if case .integer(let v) = value { return wordHash(UInt64(bitPattern: v), seed: seed) }
            return value._rawHashValue(seed: seed)
        }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    /// The objects of `group` that share a key with an earlier one, a list per key that starts with the first
    /// holder; objects without a key (a null in it) never collide.
    private static func collisions<Key: Hashable>(_ group: [ManagedObject], key: (ManagedObject) -> Key?) -> [[ManagedObject]] {
        var first: [Key: ManagedObject] = [:]
        first.reserveCapacity(group.count)
        var seen: [Key: [ManagedObject]] = [:]
        for object in group {
            guard let k = key(object) else { continue }
            // One hash per object: the newest holder replaces the earlier one, which starts the list on a collision
            // (a third holder finds the list started and joins it).
            if let earlier = first.updateValue(object, forKey: k) {
                seen[k, default: [earlier]].append(object)
            }
        }
        return Array(seen.values)
    }

    func buildSaveRequest() -> SaveRequest {
        var request = SaveRequest()
        request.author = transactionAuthor
        request.contextName = name
        request.assignedStores = assignedStores
        // Many-to-many rows, written once from the side that owns the join table; collected in the same pass
        // over each object as its row (a pass of its own touched every object once more: a cache miss per
        // object in a large save).
        func addJoinChanges(_ object: ManagedObject) {
            guard !object.isDeletedFlag && !object.toMany.isEmpty else { return }
            if object.entity.hasOrderedToMany { addOrderChanges(object) }
            for (index, state) in object.toMany.enumerated() {
                guard let state, state.isChanged else { continue }
                let relationship = object.entity.toManyRelationships[index]
                guard SQLiteSchema.isManyToMany(object.entity, relationship) else { continue }
                let join = SQLiteSchema.joinTable(object.entity, relationship)
                guard join.isOwned(by: object.entity, relationship) else { continue }
                for id in state.current.subtracting(state.original) {
                    request.joinChanges.append(.init(entity: object.entity, relationship: relationship, source: object.objectID, destination: id, isInsert: true))
                }
                for id in state.original.subtracting(state.current) {
                    request.joinChanges.append(.init(entity: object.entity, relationship: relationship, source: object.objectID, destination: id, isInsert: false))
                }
            }
        }
        // Docs/coredata-behaviour.md §12.4: an ordered relationship whose members or order changed sends its
        // members in order; the store writes the places that differ from those it holds.
        func addOrderChanges(_ object: ManagedObject) {
            for (index, state) in object.toMany.enumerated() {
                guard let state, let order = state.order, state.isChanged else { continue }
                let relationship = object.entity.toManyRelationships[index]
                request.orderChanges.append(.init(entity: object.entity, relationship: relationship, source: object.objectID, members: order.current))
            }
        }
        // In insertion order (temporary IDs count up), so permanent IDs follow it and the same workload gives
        // the same rows on every run, not an order that depends on set hashing.
        // Permanent IDs (obtained early) first, then temporary ones; each by key, compared as plain integers.
        var permanent: [(key: Int64, object: ManagedObject)] = [], temporary: [(key: Int64, object: ManagedObject)] = []
        temporary.reserveCapacity(insertedSet.count)
        for object in insertedSet where !object.isDeletedFlag {
            if object.objectID.isTemporaryID { temporary.append((object.objectID.key, object)) } else { permanent.append((object.objectID.key, object)) }
        }
        permanent.sort { $0.key < $1.key }
        temporary.sort { $0.key < $1.key }
        request.inserts.reserveCapacity(permanent.count + temporary.count)
        for (_, object) in [permanent, temporary].joined() {
            request.inserts.append(.init(id: object.objectID, values: object.values))
            addJoinChanges(object)
        }
        // Rows are written in (entity, store, primary key) order, not in the order the set hashes its objects
        // (their addresses): the statements, and the history changes that record them, are the same on every
        // run; and the table's B-tree is walked once front to back instead of at random, which keeps a large
        // save's pages in SQLite's page cache and the CPU's (Benchmarks/LOG.md).
        // The order is sorted as plain words with the object unretained: sorting the requests
        // themselves would move their values' reference counts (a retain and a release per move).
        var order: UpdateOrder = []
        order.reserveCapacity(updatedSet.count)
        updatedSet.forEachUnretained { object in
            addJoinChanges(object)
            // Rule 3: an object updated by a transient change alone has nothing to write.
            guard !object.isDeletedFlag && !object.isInsertedFlag && object.hasPersistentChanges else { return }
            let id = object.objectID
            order.append((id.entity.entityNumber, id.storeNumber, id.key, Unmanaged.passUnretained(object)))
        }
        Self.sortInKeyOrder(&order)
        request.updates.reserveCapacity(order.count)
        for entry in order {
            // The updated set holds every object listed here until the save is over.
            entry.object._withUnsafeGuaranteedRef { object in
                // A slot set iterates in ascending order already: no sort, and no array of the slots per object
                // (an allocation and its release: 0.4k instructions per updated object).
                request.updates.append(.init(id: object.objectID, oldVersion: object.snapshotVersion, values: object.values, changedSlots: object.changedSlots))
            }
        }
        for object in deletedSet where !object.isInsertedFlag && object.original != nil && object.snapshotVersion > 0 {
            var tombstone: [String: PropertyValue] = [:]
            for (slot, s) in object.entity.slots.enumerated() {
                if case .attribute(let a) = s, a.preservesValueInHistoryOnDeletion, let original = object.original { tombstone[a.name] = original.values[slot] }
            }
            request.deletes.append(.init(id: object.objectID, oldVersion: object.snapshotVersion, tombstone: tombstone))
        }
        request.deletes.sort { Self.keyOrder($0.id, $1.id) }
        for object in lockedObjects where !object.hasChanges && !object.objectID.isTemporaryID && object.original != nil {
            request.locked.append((object.objectID, object.snapshotVersion))
        }
        request.locked.sort { Self.keyOrder($0.id, $1.id) }
        if request.joinChanges.count > 1 {
            // In an order of their own too (source, then destination; removals before additions), not the sets'.
            request.joinChanges.sort { a, b in
                if a.source != b.source { return Self.keyOrder(a.source, b.source) }
                if a.destination != b.destination { return Self.keyOrder(a.destination, b.destination) }
                return !a.isInsert && b.isInsert
            }
        }
        return request
    }

    /// A save's updated rows, as ``buildSaveRequest()`` orders them.
    typealias UpdateOrder = [(entity: Int, store: UInt32, key: Int64, object: Unmanaged<ManagedObject>)]

    /// Sorts `order` by entity, store and key (``keyOrder(_:_:)``). The usual large save updates rows of one entity
    /// in one store whose keys are dense (a range at most four times their number): each is then placed in a
    /// table by its key and read back in key order, in time linear in the save's size; a comparison sort grows as
    /// n log n and, past the caches, misses them on most moves. The order is the same either way (a key is
    /// unique within its entity and store; a repeated one falls back to the sort).
    static func sortInKeyOrder(_ order: inout UpdateOrder) {
        guard order.count > 1 else { return }
        let first = order[0]
        var low = first.key, high = first.key, uniform = true
        for entry in order {
            guard entry.entity == first.entity && entry.store == first.store else {
                uniform = false
                break
            }
            low = min(low, entry.key)
            high = max(high, entry.key)
        }
        let (range, overflow) = high.subtractingReportingOverflow(low)
        if uniform, order.count >= 64, !overflow, range < Int64(order.count) * 4 {
            var slots = [Unmanaged<ManagedObject>?](repeating: nil, count: Int(range) + 1)
            var placed = true
            for entry in order {
                let i = Int(entry.key - low)
                guard slots[i] == nil else {
                    placed = false
                    break
                }
                slots[i] = entry.object
            }
            if placed {
                var n = 0
                for (i, object) in slots.enumerated() {
                    guard let object else { continue }
                    order[n] = (first.entity, first.store, low + Int64(i), object)
                    n += 1
                }
                return
            }
        }
        order.sort { a, b in (a.entity, a.store, a.key) < (b.entity, b.store, b.key) }
    }

    /// The order a save writes rows in: by entity, then store, then primary key (a temporary ID's key is its
    /// number; only join rows of inserted objects have one here).
    @inline(__always)
    static func keyOrder(_ a: ManagedObjectID, _ b: ManagedObjectID) -> Bool {
        let ea = a.entity.entityNumber, eb = b.entity.entityNumber
        if ea != eb { return ea < eb }
        if a.storeNumber != b.storeNumber { return a.storeNumber < b.storeNumber }  // temporary (0) first
        return a.key < b.key
    }

    /// After the store committed: permanent IDs, new snapshots, unregistered deletes, `didSave`, notifications
    /// (semantics §2.1 step 7).
    private func didCommit(newIDs: [ManagedObjectID: ManagedObjectID], coordinator: PersistentStoreCoordinator, historyToken: PersistentHistoryToken?,
                           savedRows: SaveReferences?) {
        let inserted = Self.keeping(insertedSet) { !$0.isDeletedFlag }
        let deleted = Self.keeping(deletedSet) { !$0.isInsertedFlag }
        if !assignedStores.isEmpty { assignedStores = [:] }  // every insert reached its store
        remapIDs(newIDs)
        // Semantics §2.2: the descendants re-key their objects for these rows too; queued before the did-save
        // below, so that their automatic merges of it find the permanent IDs.
        propagatePermanentIDs(newIDs)
        // One walk of the updated objects does four jobs (in a large save each walk misses the caches once per
        // object): which of them the notification names, their new snapshots, their leaving the
        // updated set, and their IDs for the notification's ID sets.
        let changed = updatedSet  // walked as it is now, its members kept alive
        var updatedIDs: [ManagedObjectID] = []
        updatedIDs.reserveCapacity(changed.count)
        var keepsAll = true
        changed.forEachInMemoryOrder { object in
            object.isInUpdatedSet = false  // the set is emptied below (``clearUpdated()``)
            guard Self.isSavedUpdate(object) else {
                keepsAll = false
                return
            }
            updatedIDs.append(object.objectID)
            object.transientsChanged = false
            // A transient change alone wrote no row: the version stays (Rule 3).
            guard object.hasPersistentChanges else { return }
            object.original = RowSnapshot(values: object.values, version: object.snapshotVersion + 1)
            object.changedSlots = []
            settleToManys(object)
        }
        let updated = keepsAll ? changed : changed.filter(Self.isSavedUpdate)
        var insertedIDs: [ManagedObjectID] = []
        insertedIDs.reserveCapacity(inserted.count)
        for object in inserted {
            // The coordinator installed the new row with one reference for this object.
            if object.cacheReference != nil { coordinator.rowCache.release(object.objectID) }
            object.cacheReference = coordinator.rowCache
            object.isInsertedFlag = false
            object.transientsChanged = false
            object.original = RowSnapshot(values: object.values, version: 1)
            object.changedSlots = []
            settleToManys(object)
            insertedIDs.append(object.objectID)
        }
        for object in deletedSet {
            unregister(object)
            object.isDeletedFlag = false
            object.managedObjectContext = nil
            if let cache = object.cacheReference {
                cache.release(object.objectID)
                object.cacheReference = nil
            }
        }
        insertedSet.removeAll(keepingCapacity: insertedSet.count <= Self.keptSetCapacity)
        updatedSet.removeAll(keepingCapacity: updatedSet.count <= Self.keptSetCapacity)  // flags cleared in the walk
        deletedSet = []
        lockedObjects = []
        Probe.count(.saved(self))
        inserted.forEachUnretained { $0.didSave() }
        updated.forEachUnretained { $0.didSave() }
        deleted.forEachUnretained { $0.didSave() }
        let ids = ContextObjectIDChanges(inserted: Set(insertedIDs), updated: Set(updatedIDs), deleted: Set(deleted.map(\.objectID)))
        // Semantics §3.7: the save advances a pinned context's generation; the did-save names the one after it.
        postDidSave(inserted: inserted, updated: updated, deleted: deleted, ids: ids, rowCache: coordinator.rowCache, savedRows: savedRows,
                    historyToken: historyToken, queryGeneration: queryGenerationAfterSave(to: coordinator))
    }

    /// Whether an object of the updated set is announced as updated by the save: not deleted, and not inserted.
    private static func isSavedUpdate(_ object: ManagedObject) -> Bool {
        !object.isDeletedFlag && !object.isInsertedFlag
    }

    /// `set.filter(isIncluded)`, but the set itself when every member is kept (the usual case: a save's
    /// change sets rarely hold objects to leave out), so no set is rehashed.
    static func keeping(_ set: Set<ManagedObject>, _ isIncluded: (ManagedObject) -> Bool) -> Set<ManagedObject> {
        set.allSatisfy(isIncluded) ? set : set.filter(isIncluded)
    }

    private func settleToManys(_ object: ManagedObject) {
        object.pendingToMany = nil  // saved: the destinations' foreign keys hold these changes now
        for i in object.toMany.indices {
            if var state = object.toMany[i] {
                state.settle()
                object.toMany[i] = state
            }
        }
    }

    /// Posts did-save (with the objects) and did-save-object-IDs. `rowCache` is the coordinator's cache when the
    /// save reached the store (nil for a child's push into its parent).
    /// `ids`: the objects' IDs when the caller collected them already; `savedRows`: the references the coordinator
    /// took on the saved rows for this notification.
    func postDidSave(inserted: Set<ManagedObject>, updated: Set<ManagedObject>, deleted: Set<ManagedObject>, ids: ContextObjectIDChanges? = nil,
                     rowCache: RowCache? = nil, savedRows: SaveReferences? = nil, historyToken: PersistentHistoryToken? = nil,
                     queryGeneration: QueryGenerationToken? = nil) {
        typealias Key = NotificationKey
        let ids = ids ?? ContextObjectIDChanges(
            inserted: Set(inserted.map(\.objectID)), updated: Set(updated.map(\.objectID)), deleted: Set(deleted.map(\.objectID)))
        var info: [AnyHashable: Any] = [
            Key.insertedObjects.rawValue: inserted,
            Key.updatedObjects.rawValue: updated,
            Key.deletedObjects.rawValue: deleted,
        ]
        // Rule 32 (semantics §2.3, §3.1): the notification keeps the saved rows cached until every
        // observer has let go of it, as the saved objects in Core Data's notification keep their snapshots.
        if let rowCache, !ids.inserted.isEmpty || !ids.updated.isEmpty {
            info[SavedRows.userInfoKey] = SavedRows(ids, cache: rowCache, taken: savedRows)
        }
        if let historyToken { info[Key.newChangeToken.rawValue] = historyToken }
        if let queryGeneration { info[Key.queryGeneration.rawValue] = queryGeneration }
        Probe.posting(.didSave) { NotificationCenter.default.post(name: Self.didSaveNotification, object: self, userInfo: info) }
        var idInfo = ids.userInfo
        if let historyToken { idInfo[Key.newChangeToken.rawValue] = historyToken }
        Probe.posting(.didSaveObjectIDs) { NotificationCenter.default.post(name: Self.didSaveObjectIDsNotification, object: self, userInfo: idInfo) }
    }

    /// Holds the registered objects that `object`'s to-ones and loaded to-manys name (no lookup creates one).
    func holdRegisteredTargets(of object: ManagedObject) {
        guard !object.isFaultFlag else { return }
        for (slot, s) in object.entity.slots.enumerated() {
            guard case .toOne = s, slot < object.values.count, case .objectID(let id) = object.values[slot],
                  let target = registry[id] else { continue }
            object.hold(one: target, at: slot)
        }
        for (index, state) in object.toMany.enumerated() {
            guard let state, !state.current.isEmpty else { continue }
            let targets = state.current.compactMap { registry[$0] }
            if !targets.isEmpty { object.hold(many: targets, at: ManagedObject.heldToManyOffset + index) }
        }
    }

    /// Re-inserts an object whose row was deleted elsewhere, keeping its ID (Overwrite, semantics §1.4).
    func forceInsertion(_ object: ManagedObject) {
        unmarkUpdated(object)
        object.isInsertedFlag = true
        object.original = nil
        object.changedSlots = SlotSet(object.values.indices)
        for i in object.toMany.indices {
            if var state = object.toMany[i] {
                state.original = []
                object.toMany[i] = state
            }
        }
        insertedSet.insert(object)
    }

    // MARK: To a parent context

    /// Semantics §2.2: the child's changes become the parent's own pending inserts, updates and deletes.
    private func pushToParent(_ parent: ManagedObjectContext) throws {
        let inserted = Self.keeping(insertedSet) { !$0.isDeletedFlag }
        let updated = Self.keeping(updatedSet) { !$0.isDeletedFlag && !$0.isInsertedFlag }
        let deleted = Self.keeping(deletedSet) { !$0.isInsertedFlag }
        struct Change {
            var id: ManagedObjectID
            var original: RowSnapshot?
            var values: [PropertyValue]
            var changedSlots: SlotSet
            var toMany: [Set<ManagedObjectID>?]
            /// §12.4: the order of each pushed ordered relationship; nil for an entity without them.
            var orders: [[ManagedObjectID]?]?
            var transients: [PropertyValue]
            var transientsChanged: Bool
            var transientLinks: [Set<ManagedObjectID>]
        }
        func change(_ o: ManagedObject) -> Change {
            Change(id: o.objectID, original: o.original, values: o.values, changedSlots: o.changedSlots,
                   toMany: o.toMany.map { s in s.flatMap { $0.isChanged || o.isInsertedFlag ? $0.current : nil } },
                   orders: o.entity.hasOrderedToMany ? o.toMany.map { s in s.flatMap { $0.isChanged || o.isInsertedFlag ? $0.order?.current : nil } } : nil,
                   transients: o.transients,
                   transientsChanged: o.transientsChanged, transientLinks: o.transientLinks)
        }
        let insertChanges = inserted.map(change)
        let updateChanges = updated.map(change)
        let deleteIDs = deleted.map(\.objectID)
        try parent.performAndWait {
            // Rule 21.3: a child's save is not an undoable change of the parent (inferred).
            parent.undoCaptureSuppressed += 1
            defer { parent.undoCaptureSuppressed -= 1 }
            // Semantics §2.2: from now on the parent keeps the ID changes its saves make, for its children.
            parent.servingChild()
            for c in insertChanges {
                let object: ManagedObject
                if let existing = parent.registry[c.id] {
                    object = existing
                } else {
                    object = c.id.entity.managedObjectClass.init(entity: c.id.entity, insertInto: nil)
                    object.objectID = c.id
                    object.prepareForInsert()
                    object.isInsertedFlag = true
                    parent.register(object)
                    parent.insertedSet.insert(object)
                    parent.pendingInserted.insert(object)
                    object.isInsertPending = true
                    object.awakeFromInsert()
                }
                object.values = c.values
                object.changedSlots = SlotSet(c.values.indices.filter { !c.values[$0].isNull })
                object.transients = c.transients
                object.transientLinks = c.transientLinks  // Rule 21.2: transient relationships go up too
                for (i, ids) in c.toMany.enumerated() { if let ids { object.toMany[i] = .init(current: ids, original: []) } }
                if let orders = c.orders {
                    for (i, order) in orders.enumerated() { if let order { object.toMany[i]?.order = .init(current: order, original: []) } }
                }
            }
            for c in updateChanges {
                let object = parent.object(with: c.id)
                // The row cache answers (the child's objects hold their rows there): no I/O (semantics §2.2). The
                // child's own snapshot may be older than the row the parent would see, so it is only the fallback.
                if object.isFaultFlag, let original = c.original, (try? parent.fulfillFault(object, throwing: true)) == nil {
                    object.fill(from: original)
                } else {
                    try parent.fulfillFault(object, throwing: true)
                }
                for slot in c.changedSlots { object.setSlot(slot, c.values[slot]) }
                for (i, ids) in c.toMany.enumerated() {
                    guard let ids else { continue }
                    if object.toMany[i] == nil { try parent.fulfillToMany(object, index: i) }
                    object.setToManyIDs(i, ids)
                    if let order = c.orders?[i] { object.setOrderedIDs(i, order) }
                }
                // Semantics §2.2 (Rule 4): transient values go up too; a transient change alone updates
                // the parent's object as it did the child's.
                object.transients = c.transients
                object.transientLinks = c.transientLinks
                if c.transientsChanged { object.transientsChanged = true }
                parent.noteChange(object)
            }
            for id in deleteIDs {
                let object = parent.object(with: id)
                parent.markDeleted(object)
            }
            // Rule 1: the parent's copies hold their related objects as the child's did (those the parent
            // has: a child save copies its object graph, semantics §2.2), so a cycle pushed up outlives the
            // parent's own save as it would have the child's.
            for c in [insertChanges, updateChanges].joined() {
                if let object = parent.registry[c.id] { parent.holdRegisteredTargets(of: object) }
            }
            Probe.count(.objectPushed, insertChanges.count + updateChanges.count + deleteIDs.count)
            parent.processPendingChanges()
            parent.childPushHook?(self)
        }
        for object in [inserted, updated].joined() {
            object.isInsertedFlag = false
            object.transientsChanged = false
            object.original = RowSnapshot(values: object.values, version: object.snapshotVersion)
            object.changedSlots = []
            settleToManys(object)
        }
        for object in deletedSet {
            unregister(object)
            object.isDeletedFlag = false
            object.managedObjectContext = nil
            if let cache = object.cacheReference {
                cache.release(object.objectID)
                object.cacheReference = nil
            }
        }
        insertedSet = []
        clearUpdated()
        deletedSet = []
        Probe.count(.saved(self))
        for object in [inserted, updated, deleted].joined() { object.didSave() }
        postDidSave(inserted: inserted, updated: updated, deleted: deleted)
    }
}

extension Set where Element == ManagedObject {
    /// Calls `body` with each member, without retaining it. The set (a value: a copy of the context's set, if the
    /// context's changes meanwhile) keeps every member alive until the walk ends, so the reference is safe to use;
    /// a `for` loop over the set retains and releases each member around every call it cannot see through
    /// (`willSave`, validation, `didSave`), two atomic operations each: 0.15k instructions per object per walk
    /// when registered objects still had side tables (before ``ObjectRegistry``), and a save walks its objects
    /// five times (0.76k per updated item in all then). A plain `for` with `Unmanaged` inside does not help: the loop variable lives, and stays
    /// retained, until the end of the body.
    @inline(__always)
    func forEachUnretained(_ body: (ManagedObject) throws -> Void) rethrows {
        try withExtendedLifetime(self) {
            var i = startIndex
            while i != endIndex {
                // The element read here (+1) is dead before `body` runs, so its retain and release meet and go.
                let object = Unmanaged.passUnretained(self[i])
                try object._withUnsafeGuaranteedRef(body)
                formIndex(after: &i)
            }
        }
    }

    /// ``forEachUnretained(_:)`` in the order of the objects' addresses: the objects of a large save are walked
    /// through memory in order rather than in the set's hash order (a cache miss each once they outgrow the caches).
    func forEachInMemoryOrder(_ body: (ManagedObject) throws -> Void) rethrows {
        guard count > 512 else { return try forEachUnretained(body) }
        var addresses: [UInt] = []
        addresses.reserveCapacity(count)
        forEachUnretained { addresses.append(UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque())) }
        addresses.sort()
        try withExtendedLifetime(self) {
            for a in addresses {
                try Unmanaged<ManagedObject>.fromOpaque(UnsafeRawPointer(bitPattern: a)!)._withUnsafeGuaranteedRef(body)
            }
        }
    }
}
