import Foundation

// Ordered to-many relationships (Docs/coredata-behaviour.md §12): Core Data's `NSOrderedSet` relationships and the
// mutations of `mutableOrderedSetValue(forKey:)`, as methods of the object. Each mutation keeps the inverses, as
// `setValue(_:forKey:)` does, and a change of order alone is a change of the object.

extension ManagedObject {
    /// The objects of the ordered to-many relationship `key`, in order, loading the relationship fault (one query).
    ///
    /// ``value(forKey:)`` gives the same array for an ordered relationship.
    /// - Throws: ``ObjectGraphError`` (1550) when `key` is not an ordered to-many relationship.
    public func orderedObjects(forRelationship key: String) throws -> [ManagedObject] {
        try orderedObjects(try orderedIndex(key))
    }

    /// The IDs of the ordered to-many relationship `key`'s destinations, in order, loading the relationship fault.
    public func orderedObjectIDs(forRelationshipNamed key: String) throws -> [ManagedObjectID] {
        let index = try orderedIndex(key)
        _ = try relatedIDs(index)
        return toMany[index]?.ordered ?? []
    }

    /// Inserts `object` at `index` of the ordered relationship `key` (`insertObject:atIndex:` of
    /// `mutableOrderedSetValue(forKey:)`). An object already in the relationship stays where it is: the insert is
    /// ignored, as an `NSOrderedSet` holds an object once (§12.3).
    /// - Throws: 1550 when `key` is not an ordered to-many or `index` is not in `0...count`.
    public func insertObject(_ object: ManagedObject, at index: Int, inRelationship key: String) throws {
        try mutateOrdered(key) { objects in
            try Self.checkIndex(index, in: 0...objects.count, key, self)
            guard !objects.contains(where: { $0.objectID == object.objectID }) else { return }
            objects.insert(object, at: index)
        }
    }

    /// Removes the object at `index` of the ordered relationship `key`, keeping the inverse.
    /// - Throws: 1550 when `key` is not an ordered to-many or `index` is not in `0..<count`.
    public func removeObject(at index: Int, fromRelationship key: String) throws {
        try mutateOrdered(key) { objects in
            try Self.checkIndex(index, in: 0..<objects.count, key, self)
            objects.remove(at: index)
        }
    }

    /// Moves the object at `source` of the ordered relationship `key` to `destination` (its index once moved).
    /// - Throws: 1550 when `key` is not an ordered to-many or an index is not in `0..<count`.
    public func moveObject(at source: Int, to destination: Int, inRelationship key: String) throws {
        try mutateOrdered(key) { objects in
            try Self.checkIndex(source, in: 0..<objects.count, key, self)
            try Self.checkIndex(destination, in: 0..<objects.count, key, self)
            objects.insert(objects.remove(at: source), at: destination)
        }
    }

    /// Replaces the object at `index` of the ordered relationship `key` with `object`, keeping the inverses. An
    /// object already elsewhere in the relationship is not placed twice: the replacement is ignored (§12.3).
    /// - Throws: 1550 when `key` is not an ordered to-many or `index` is not in `0..<count`.
    public func replaceObject(at index: Int, with object: ManagedObject, inRelationship key: String) throws {
        try mutateOrdered(key) { objects in
            try Self.checkIndex(index, in: 0..<objects.count, key, self)
            guard !objects.contains(where: { $0.objectID == object.objectID }) else { return }
            objects[index] = object
        }
    }

    // MARK: Internals

    /// The objects of a loaded or loadable ordered relationship, held by it (Rule 1).
    func orderedObjects(_ index: Int) throws -> [ManagedObject] {
        _ = try relatedIDs(index)
        guard let context = managedObjectContext, let ids = toMany[index]?.ordered else { return [] }
        let key = Self.heldToManyOffset + index
        if let held = heldObjects?.many(key), held.map(\.objectID) == ids { return held }
        let objects = ids.map { context.object(with: $0) }
        hold(many: objects, at: key)
        return objects
    }

    private func orderedIndex(_ key: String) throws -> Int {
        guard case .toMany(let index)? = ref(key), entity.toManyIsOrdered[index] else {
            throw ObjectGraphError(.validation, "\(key) is not an ordered to-many relationship", entity: entity.name, objectID: objectID, property: key)
        }
        return index
    }

    private func mutateOrdered(_ key: String, _ change: (inout [ManagedObject]) throws -> Void) throws {
        let index = try orderedIndex(key)
        withContext { $0.assertOnQueue() }
        var objects = try orderedObjects(index)
        let before = objects.map(\.objectID)
        try change(&objects)
        guard objects.map(\.objectID) != before else { return }
        try setOrderedToMany(index: index, key: key, objects: objects)
    }

    private static func checkIndex<R: RangeExpression>(_ index: Int, in range: R, _ key: String, _ object: ManagedObject) throws where R.Bound == Int {
        guard range.contains(index) else {
            throw ObjectGraphError(.validation, "index \(index) is out of the range of \(key) (\(range))", entity: object.entity.name, objectID: object.objectID, property: key)
        }
    }
}
