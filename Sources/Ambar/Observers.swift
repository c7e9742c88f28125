import Foundation
import ObjectGraph

/// Observes one object (PeakCoreData's `ManagedObjectObserver`): initialised when observing starts, then
/// refreshed (merged in), updated (changed in its context) or deleted. Observing stops when the observer is
/// released. Handlers run on the object's context's queue.
public final class ManagedObjectObserver<T: ManagedObject>: @unchecked Sendable {  // used on the object's context's queue
    /// What happened to the object.
    public enum ChangeType: Sendable, Equatable {
        case initialised, refreshed, updated, deleted
    }

    /// The observed object.
    public let managedObject: T
    private var token: (any NSObjectProtocol)?
    private var handler: ((T, ChangeType) -> Void)?

    /// Observes `managedObject` in its context.
    public init(managedObject: T) { self.managedObject = managedObject }

    deinit { stopObserving() }

    /// Starts observing; calls `handler` with `.initialised` at once.
    public func startObserving(_ handler: @escaping (T, ChangeType) -> Void) {
        stopObserving()
        guard let context = managedObject.managedObjectContext else { return }
        handler(managedObject, .initialised)
        self.handler = handler
        token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { [weak self] note in
            guard let self, let handler = self.handler, let change = ObjectsDidChange(note) else { return }
            let object = self.managedObject
            if change.deleted.contains(object) || change.invalidated.contains(object) || change.invalidatedAll {
                handler(object, .deleted)
            } else if change.refreshed.contains(object) {
                handler(object, .refreshed)
            } else if change.updated.contains(object) {
                handler(object, .updated)
            }
        }
    }

    /// Stops observing.
    public func stopObserving() {
        if let token { NotificationCenter.default.removeObserver(token) }
        token = nil
    }
}

/// Observes the number of objects of `T` matching a predicate (PeakCoreData's `CountObserver`).
///
/// It recounts (one `count(for:)`, pending changes included) only when a change can affect the count: an
/// inserted or deleted object of the entity that matches, an update touching a key the predicate reads, a
/// merged refresh of an object of the entity, or a reset. Handlers run on the context's queue.
public final class CountObserver<T: ManagedObjectType>: @unchecked Sendable {  // used on its context's queue
    /// The predicate counted (nil: all objects of the entity).
    public let predicate: ObjectPredicate?
    /// The context observed.
    public let context: ManagedObjectContext
    /// The last count.
    public private(set) var count = 0
    /// Recounts done after the first (deterministic counter).
    private(set) var recounts = 0
    private var token: (any NSObjectProtocol)?
    private var handler: ((Int) -> Void)?
    private let keys: Set<String>

    public init(predicate: ObjectPredicate? = nil, context: ManagedObjectContext) {
        self.predicate = predicate
        self.context = context
        self.keys = predicate.map(Self.rootKeys) ?? []
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    /// Counts now, calls `handler`, and again whenever the count may have changed.
    public func startObserving(_ handler: @escaping (Int) -> Void) throws {
        if let token { NotificationCenter.default.removeObserver(token) }
        count = try T.count(in: context, predicate: predicate)
        handler(count)
        self.handler = handler
        token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { [weak self] note in
            guard let self, let handler = self.handler, let change = ObjectsDidChange(note), self.mayAffectCount(change) else { return }
            guard let newCount = try? T.count(in: self.context, predicate: self.predicate) else { return }
            self.recounts += 1
            if newCount != self.count {
                self.count = newCount
                handler(newCount)
            }
        }
    }

    private func mayAffectCount(_ change: ObjectsDidChange) -> Bool {
        if change.invalidatedAll { return true }
        let entity = T.entityName
        func matches(_ o: ManagedObject) -> Bool { predicate.map { (try? $0.evaluate(with: o)) ?? true } ?? true }
        // The count's fetch includes sub-entities, so their objects' changes count too.
        for o in change.inserted.union(change.deleted).union(change.invalidated) where o.entity.isKindOf(entityNamed: entity) {
            if predicate == nil || matches(o) { return true }
        }
        guard predicate != nil else { return false }
        if change.refreshed.contains(where: { $0.entity.isKindOf(entityNamed: entity) }) { return true }
        for o in change.updated where o.entity.isKindOf(entityNamed: entity) {
            // Only a change to a key the predicate reads can move the object in or out of the count.
            let changed = Set(o.changedValuesForCurrentEvent().keys)
            if !changed.isDisjoint(with: keys) { return true }
        }
        return false
    }

    private static func rootKeys(_ predicate: ObjectPredicate) -> Set<String> {
        var keys = Set<String>()
        func expression(_ e: ObjectExpression) {
            if case .keyPath(let path) = e, let first = path.split(separator: ".").first { keys.insert(String(first)) }
        }
        func walk(_ n: ObjectPredicate.Node) {
            switch n {
            case .constant: break
            case .comparison(let c): expression(c.left); expression(c.right)
            case .and(let ns), .or(let ns): ns.forEach(walk)
            case .not(let n): walk(n)
            }
        }
        walk(predicate.node)
        return keys
    }
}

