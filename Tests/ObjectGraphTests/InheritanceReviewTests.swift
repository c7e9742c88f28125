import Foundation
import Testing
@testable import ObjectGraph

/// Review of issue 21 item 1 (entity inheritance), Docs/coredata-behaviour.md §11: the cases the first tests did
/// not reach. Model: EntityInheritanceTests.model() (Person; Post abstract with Photo, Note; Memo a Note; Tag).
@Suite struct InheritanceReviewTests {
    typealias T = EntityInheritanceTests

    static func names(_ objects: [ManagedObject]) -> [String] {
        objects.map { "\($0.entity.name):\($0.value(forKey: "slug") as? String ?? "-")" }
    }

    /// One memo and one note (no photo): rows whose own entity has every key the tests name.
    static func memosOnly(_ type: PersistentStoreType) throws -> TestStack {
        let stack = try TestStack(model: T.model(), type: type)
        let ctx = stack.context()
        try ctx.performAndWait {
            let memo = try T.insert(ctx, "Memo", ["slug": "m1", "priority": 3])
            let person = try T.insert(ctx, "Person", ["name": "ann"])
            try person.setValue(memo, forKey: "favorite")
            try ctx.save()
        }
        return stack
    }

    @Test("§11.3: a parent's fetch can only name the parent's properties: a sub-entity's key in a predicate, a sort or a key path through a to-one into the hierarchy is refused naming the parent, in either store, whatever rows it holds",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func parentFetchRefusesSubentityKeys(type: PersistentStoreType) throws {
        let stack = try Self.memosOnly(type)
        let ctx = stack.context()
        ctx.performAndWait {
            let requests = [
                FetchRequest(entityName: "Post", predicate: .compare("priority", .equalTo, 3)),
                FetchRequest(entityName: "Post", sortDescriptors: [ObjectSortDescriptor("priority")]),
                FetchRequest(entityName: "Person", predicate: .compare("favorite.priority", .equalTo, 3)),
            ]
            for request in requests {
                do {
                    let found = try ctx.fetch(request)
                    Issue.record("\(type): \(request.entityName) fetched \(found.count) with a key of Memo")
                } catch let error as ObjectGraphError {
                    #expect(error.code == .invalidFetchRequest && error.message.contains("priority"))
                    // SQLite names the fetch's entity and the whole key path, the in-memory store the entity that
                    // lacks the key: Post either way for a key of Post's fetch.
                    if request.entityName == "Post" { #expect(error.entityName == "Post" && error.propertyName == "priority") }
                } catch { Issue.record("\(error)") }
            }
            // The sub-entity's own fetch takes them.
            #expect((try? ctx.fetch(FetchRequest(entityName: "Memo", predicate: .compare("priority", .equalTo, 3))))?.count == 1)
        }
    }

}
