import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

// Helpers for MergePolicyTests / MergeChangesTests (names prefixed `mg` to stay apart from Support.swift and the
// other suites' helpers).

/// The merge policies the conflict matrix runs, including ObjectTrump's configurable "deleted elsewhere" rule
/// (semantics §1.4: resurrect instead of accepting the delete).
enum MGPolicy: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case error, storeTrump, objectTrump, objectTrumpResurrect, overwrite, rollback

    var policy: MergePolicy {
        switch self {
        case .error: return .error
        case .storeTrump: return .mergeByPropertyStoreTrump
        case .objectTrump: return .mergeByPropertyObjectTrump
        case .objectTrumpResurrect: return MergePolicy(type: .mergeByPropertyObjectTrump, deletedElsewhere: .resurrect)
        case .overwrite: return .overwrite
        case .rollback: return .rollback
        }
    }

    var testDescription: String { rawValue }
}

/// One `ZITEM` row as the `sqlite3` CLI would see it, with its tag's name.
struct MGRow: Equatable, CustomStringConvertible {
    var pk: Int64
    var opt: Int64
    var name: String?
    var price: Double
    var tag: String?

    var description: String { "Z_PK=\(pk) Z_OPT=\(opt) name=\(name ?? "nil") price=\(price) tag=\(tag ?? "nil")" }
}

func mgDouble(_ v: SQLiteValue) -> Double {
    switch v {
    case .real(let d): return d
    case .integer(let i): return Double(i)
    default: return .nan
    }
}

/// The rows of the store whose `id` attribute is `id` (read with a raw SQLite connection).
func mgRows(_ stack: TestStack, id: Int64) throws -> [MGRow] {
    try stack.sql("""
        SELECT i.Z_PK, i.Z_OPT, i.ZNAME, i.ZPRICE, t.ZNAME FROM ZITEM i LEFT JOIN ZTAG t ON t.Z_PK = i.ZTAG
        WHERE i.ZID = \(id) ORDER BY i.Z_PK
        """).map { r in
        MGRow(pk: r[0].int64 ?? -1, opt: r[1].int64 ?? -1, name: r[2].string, price: mgDouble(r[3]), tag: r[4].string)
    }
}

/// A context on a brand-new coordinator for the store file: no row cache, so it reads what is on disk.
func mgFreshContext(_ stack: TestStack) throws -> ManagedObjectContext {
    stack.context(try stack.secondCoordinator(), name: "fresh")
}

/// The titles of the labels of the item with `id`, as stored (read through a fresh coordinator).
func mgStoreLabels(_ stack: TestStack, id: Int64) throws -> Set<String> {
    let ctx = try mgFreshContext(stack)
    return try ctx.performAndWait {
        guard let item = try fetchItems(ctx, .compare("id", .equalTo, id)).first else { return [] }
        return Set(item.labels.compactMap { $0.title })
    }
}

/// The object for `id` in `ctx`, loaded (never a fault).
func mgLoad<T: ManagedObject>(_ ctx: ManagedObjectContext, _ id: ManagedObjectID, as: T.Type = Item.self) throws -> T {
    try ctx.performAndWait {
        let object = try ctx.existingObject(with: id)
        return try #require(object as? T)
    }
}

/// Saves `ctx` on its queue and returns the error, if any.
func mgTrySave(_ ctx: ManagedObjectContext) -> ObjectGraphError? {
    ctx.performAndWait {
        do {
            try ctx.save()
            return nil
        } catch let error as ObjectGraphError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return ObjectGraphError(.sqlite, "\(error)")
        }
    }
}

/// The names of a set of labels.
func mgTitles(_ labels: Set<Label>) -> Set<String> { Set(labels.compactMap { $0.title }) }

/// Seeds tags A, B, C, labels L1, L2, L3 and item 1 ("item 1", price 10) with tag A and labels {L1}.
func mgSeedGraph(_ stack: TestStack) throws -> (item: ManagedObjectID, tags: [String: ManagedObjectID], labels: [String: ManagedObjectID]) {
    let ctx = stack.context(name: "seed")
    return try ctx.performAndWait {
        var tags: [String: Tag] = [:]
        for name in ["A", "B", "C"] {
            let tag = Tag(context: ctx)
            tag.name = name
            tags[name] = tag
        }
        var labels: [String: Label] = [:]
        for title in ["L1", "L2", "L3"] {
            let label = Label(context: ctx)
            label.title = title
            labels[title] = label
        }
        let item = Item(context: ctx)
        item.id = 1
        item.name = "item 1"
        item.price = 10
        item.tag = tags["A"]
        try item.addObject(labels["L1"]!, toRelationship: "labels")
        try ctx.save()
        return (item.objectID, tags.mapValues(\.objectID), labels.mapValues(\.objectID))
    }
}

/// Records the object IDs an objects-did-change notification reports, by key, without keeping the objects
/// alive (so that weak-registry checks are not disturbed).
final class MGChangeRecorder: @unchecked Sendable {
    struct Entry {
        var inserted: Set<ManagedObjectID> = []
        var updated: Set<ManagedObjectID> = []
        var deleted: Set<ManagedObjectID> = []
        var refreshed: Set<ManagedObjectID> = []
    }

    private let state = Mutex<[Entry]>([])
    private var token: (any NSObjectProtocol)?

    init(_ context: ManagedObjectContext) {
        token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil
        ) { [weak self] note in
            guard let self, let payload = ObjectsDidChange(note) else { return }
            let entry = Entry(
                inserted: Set(payload.inserted.map { $0.objectID }), updated: Set(payload.updated.map { $0.objectID }),
                deleted: Set(payload.deleted.map { $0.objectID }), refreshed: Set(payload.refreshed.map { $0.objectID }))
            self.state.withLock { $0.append(entry) }
        }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    var entries: [Entry] { state.withLock { $0 } }
    var inserted: Set<ManagedObjectID> { entries.reduce(into: []) { $0.formUnion($1.inserted) } }
    var updated: Set<ManagedObjectID> { entries.reduce(into: []) { $0.formUnion($1.updated) } }
    var deleted: Set<ManagedObjectID> { entries.reduce(into: []) { $0.formUnion($1.deleted) } }
    var refreshed: Set<ManagedObjectID> { entries.reduce(into: []) { $0.formUnion($1.refreshed) } }
}

/// Two private-queue contexts on the stack's coordinator, each holding a loaded copy of `id`.
struct MGPair {
    let ctx1: ManagedObjectContext
    let ctx2: ManagedObjectContext
    let item1: Item
    let item2: Item

    init(_ stack: TestStack, id: ManagedObjectID, policy: MergePolicy, coordinator2: PersistentStoreCoordinator? = nil) throws {
        ctx1 = stack.context(name: "ctx1")
        ctx2 = stack.context(coordinator2, policy: policy, name: "ctx2")
        item1 = try mgLoad(ctx1, id)
        item2 = try mgLoad(ctx2, id)
    }
}
