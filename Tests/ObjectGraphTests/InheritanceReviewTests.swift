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

    @Test("§11.2, semantics §4: an object ID names its row's entity: the ID of another entity of the hierarchy (a sibling's, or the abstract parent's from a URI) with that key names no object",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func objectIDOfAnotherEntityFindsNoRow(type: PersistentStoreType) throws {
        let stack = try TestStack(model: T.model(), type: type)
        try T.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try #require(try ctx.fetch(FetchRequest(entityName: "Note", predicate: .compare("slug", .equalTo, "n1"))).first)
            let photo = try #require(stack.model.entity(named: "Photo"))
            let sibling = ManagedObjectID(entity: photo, primaryKey: note.objectID.key, storeNumber: note.objectID.storeNumber)
            let abstractURI = URL(string: note.objectID.uriRepresentation.absoluteString.replacingOccurrences(of: "/Note/", with: "/Post/"))!
            let parent = try #require(stack.coordinator.managedObjectID(forURIRepresentation: abstractURI))
            let reader = stack.context()
            reader.performAndWait {
                for id in [sibling, parent] {
                    do {
                        let object = try reader.existingObject(with: id)
                        Issue.record("\(type): \(id) found \(object.entity.name) \(object.value(forKey: "slug") ?? "-")")
                    } catch let error as ObjectGraphError {
                        #expect(error.code == .referentialIntegrity)
                    } catch { Issue.record("\(error)") }
                }
                #expect((try? reader.existingObject(with: note.objectID))?.value(forKey: "slug") as? String == "n1")
            }
        }
    }

    @Test("§11.2, §11.4: a batch delete that nullifies a to-one into the hierarchy clears its Z_ENT column with its key, as a save does")
    func batchDeleteNullifyClearsTheEntityColumn() throws {
        let stack = try Self.memosOnly(.sqlite)
        #expect(try stack.sql("SELECT ZFAVORITE, Z2FAVORITE FROM ZPERSON") == [[.integer(1), .integer(4)]])
        let ctx = stack.context()
        try ctx.performAndWait { _ = try ctx.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Memo"))) }
        #expect(try stack.sql("SELECT ZFAVORITE, Z2FAVORITE FROM ZPERSON") == [[.null, .null]])
    }

    @Test("§11.4: a batch insert upsert that meets another entity's row on an inherited constraint: a sibling's row is refused under replace (naming both entities) and kept under keep; a sub-entity's row is updated as the object it is")
    func batchInsertUpsertAcrossTheHierarchy() throws {
        let stack = try TestStack(model: T.model())
        try T.seed(stack)
        func run(_ policy: MergePolicy, _ entity: String, _ values: [String: Any]) throws -> [ManagedObjectID] {
            let ctx = stack.context(policy: policy)
            return try ctx.performAndWait {
                var insert = BatchInsertRequest(entityName: entity, objects: [values])
                insert.resultType = .objectIDs
                return try ctx.execute(insert).objectIDs ?? []
            }
        }
        let before = try stack.sql("SELECT * FROM ZPOST ORDER BY Z_PK")
        // A photo with a note's slug: the row is a Note, it cannot take a Photo's values.
        do {
            _ = try run(.mergeByPropertyObjectTrump, "Photo", ["slug": "n1", "url": "u9", "extra": 9])
            Issue.record("a photo's values were written onto a note's row")
        } catch let error as ObjectGraphError {
            #expect(error.code == .constraintMerge && error.objectID?.entity.name == "Note")
            #expect(error.message.contains("Note") && error.message.contains("Photo"))
        }
        do {
            _ = try run(.error, "Photo", ["slug": "n1"])
            Issue.record("no conflict")
        } catch let error as ObjectGraphError {
            #expect(error.code == .constraintMerge && error.objectID?.entity.name == "Note")
        }
        #expect(try run(.mergeByPropertyStoreTrump, "Photo", ["slug": "n1", "url": "u9"]).isEmpty)
        #expect(try stack.sql("SELECT * FROM ZPOST ORDER BY Z_PK") == before)
        // A note with a memo's slug: the memo is a note; it takes the note's values and stays a memo.
        let ids = try run(.mergeByPropertyObjectTrump, "Note", ["slug": "m1", "body": "new"])
        #expect(ids.map(\.entity.name) == ["Memo"])
        #expect(try stack.sql("SELECT Z_ENT, ZBODY, ZPRIORITY FROM ZPOST WHERE ZSLUG = 'm1'") == [[.integer(4), .text("new"), .integer(3)]])
    }
}
