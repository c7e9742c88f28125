import Foundation
import ObjectGraph

/// Fetch, count, find and insert helpers for typed entity classes (the seeds' `ManagedObjectType`).
///
/// ```swift
/// final class Product: ManagedObject, ManagedObjectType { … }
/// let cheap = try Product.fetch(in: context, predicate: .compare("price", .lessThan, 5))
/// ```
public protocol ManagedObjectType: ManagedObject {
    /// The entity's name in the model (default: the class name).
    static var entityName: String { get }
    /// The default sort for ``fetchRequest(predicate:sortedWith:)`` (default: none).
    static var defaultSortDescriptors: [ObjectSortDescriptor] { get }
}

extension ManagedObjectType {
    public static var entityName: String { String(describing: Self.self) }
    public static var defaultSortDescriptors: [ObjectSortDescriptor] { [] }

    /// A fetch request for the entity.
    public static func fetchRequest(predicate: ObjectPredicate? = nil, sortedWith sort: [ObjectSortDescriptor]? = nil) -> FetchRequest {
        FetchRequest(entityName: entityName, predicate: predicate, sortDescriptors: sort ?? defaultSortDescriptors)
    }

    /// Inserts a new object.
    public static func insert(into context: ManagedObjectContext) throws -> Self {
        let inserted = try context.insertNewObject(forEntityName: entityName)
        // The usual case, the entity's class is exactly this one: a metatype comparison instead of a run-time cast.
        if type(of: inserted) == Self.self { return unsafeDowncast(inserted, to: Self.self) }
        guard let object = inserted as? Self else {
            throw ObjectGraphError(.validation, "entity \(entityName) is not of class \(Self.self)", entity: entityName)
        }
        return object
    }

    /// Fetches objects, optionally configuring the request.
    public static func fetch(
        in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, sortedWith sort: [ObjectSortDescriptor]? = nil,
        configure: ((inout FetchRequest) -> Void)? = nil
    ) throws -> [Self] {
        var request = fetchRequest(predicate: predicate, sortedWith: sort)
        configure?(&request)
        return try context.fetch(request, as: Self.self)
    }

    /// The first object in order, or nil.
    public static func first(in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, sortedWith sort: [ObjectSortDescriptor]? = nil) throws -> Self? {
        try fetch(in: context, predicate: predicate, sortedWith: sort) { $0.fetchLimit = 1 }.first
    }

    /// The number of matching objects (pending changes included).
    public static func count(in context: ManagedObjectContext, predicate: ObjectPredicate? = nil) throws -> Int {
        try context.count(for: fetchRequest(predicate: predicate))
    }

    /// The distinct values of one property among matching objects, in first-seen order.
    public static func fetchDistinctValues(of key: String, in context: ManagedObjectContext, predicate: ObjectPredicate? = nil) throws -> [Any] {
        var request = fetchRequest(predicate: predicate)
        request.propertiesToFetch = [key]
        var seen = Set<PropertyValue>()
        var result: [Any] = []
        for row in try context.fetchDictionaries(request) {
            guard let value = row[key] else { continue }
            if seen.insert(PropertyValue(any: value)).inserted { result.append(value) }
        }
        return result
    }

    /// Several properties of each matching object, as dictionaries (no objects are registered).
    public static func fetchValues(of keys: [String], in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, sortedWith sort: [ObjectSortDescriptor]? = nil) throws -> [[String: Any]] {
        var request = fetchRequest(predicate: predicate, sortedWith: sort)
        request.propertiesToFetch = keys
        return try context.fetchDictionaries(request)
    }

    /// The one registered object that matches, without I/O; nil when none or several match (as documented).
    public static func find(in context: ManagedObjectContext, predicate: ObjectPredicate) -> Self? {
        var found: Self?
        for object in context.registeredObjects {
            guard let typed = object as? Self, !typed.isFault, !typed.isDeleted, (try? predicate.evaluate(with: typed)) == true else { continue }
            if found != nil { return nil }
            found = typed
        }
        return found
    }

    /// ``find(in:predicate:)``, then one fetch when nothing registered matches.
    public static func findOrFetch(in context: ManagedObjectContext, predicate: ObjectPredicate) throws -> Self? {
        if let found = find(in: context, predicate: predicate) { return found }
        return try fetch(in: context, predicate: predicate) { $0.fetchLimit = 1 }.first
    }

    /// A fetched results controller over the entity.
    public static func fetchedResultsController(
        in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, sortedWith sort: [ObjectSortDescriptor]? = nil,
        sectionNameKeyPath: String? = nil
    ) -> FetchedResultsController {
        FetchedResultsController(fetchRequest: fetchRequest(predicate: predicate, sortedWith: sort), managedObjectContext: context, sectionNameKeyPath: sectionNameKeyPath)
    }

    /// Deletes the matching objects through the context (delete rules apply at save); returns how many.
    @discardableResult
    public static func delete(in context: ManagedObjectContext, predicate: ObjectPredicate? = nil) throws -> Int {
        let objects = try fetch(in: context, predicate: predicate) { $0.includesPropertyValues = false }
        for object in objects { context.delete(object) }
        return objects.count
    }

    /// Deletes matching rows in SQL and merges the deletions into `contexts` (semantics §6).
    @discardableResult
    public static func batchDelete(in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, mergeInto contexts: [ManagedObjectContext] = []) throws -> Int {
        var request = BatchDeleteRequest(fetchRequest: fetchRequest(predicate: predicate))
        request.resultType = .objectIDs
        let ids = try context.execute(request).objectIDs ?? []
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(deleted: Set(ids)), into: contexts)
        return ids.count
    }

    /// Updates matching rows in SQL and merges the updates into `contexts` with
    /// `mergeChanges(fromRemoteContextSave:into:)`, which refreshes their registered objects to the new rows
    /// whatever their `stalenessInterval` (semantics §3.4, §6).
    @discardableResult
    public static func batchUpdate(in context: ManagedObjectContext, predicate: ObjectPredicate? = nil, values: [String: Any], mergeInto contexts: [ManagedObjectContext] = []) throws -> Int {
        var request = BatchUpdateRequest(entityName: entityName, predicate: predicate, propertiesToUpdate: values)
        request.resultType = .objectIDs
        let ids = try context.execute(request).objectIDs ?? []
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(updated: Set(ids)), into: contexts)
        return ids.count
    }
}

extension ManagedObjectContext {
    /// This context's instance of an object from another context, on this or another coordinator of the same
    /// store; the ID is resolved through this context's own coordinator. Nil for unsaved objects or rows that
    /// do not exist.
    public func localInstance<T: ManagedObject>(of object: T) -> T? {
        let id = object.objectID
        guard !id.isTemporaryID else { return nil }
        guard let local = persistentStoreCoordinator?.managedObjectID(forURIRepresentation: id.uriRepresentation) else { return nil }
        return (try? existingObject(with: local)) as? T
    }
}

/// An enum stored in an attribute through its raw value (the seeds' `CoreDataRepresentable`).
///
/// ```swift
/// enum Status: String, CoreDataRepresentable { case draft, published
///     static let coreDataDefault = Status.draft }
/// final class Post: ManagedObject { @Managed("status") var status: Status }
/// ```
public protocol CoreDataRepresentable: RawRepresentable, AttributeConvertible where RawValue: AttributeConvertible {
    /// The case used when the stored value is missing or unknown.
    static var coreDataDefault: Self { get }
}

extension CoreDataRepresentable {
    public static func fromAttribute(_ value: Any?) -> Self {
        guard let value else { return coreDataDefault }
        return Self(rawValue: RawValue.fromAttribute(value)) ?? coreDataDefault
    }
    public var attributeValue: Any? { rawValue.attributeValue }
}
