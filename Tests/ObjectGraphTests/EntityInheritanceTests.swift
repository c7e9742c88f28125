import Foundation
import Testing
@testable import ObjectGraph

/// Entity inheritance. The rules are those of Docs/coredata-behaviour.md §11 (the team's semantics
/// doc says only, in §1.6, that an inherited constraint's violations make one report); the layout follows
/// Docs/design-entity-inheritance.md.
///
/// The model: Person, and Post (abstract, `slug` unique) with the sub-entities Photo and Note; Memo is a Note.
/// Photo and Note both declare `extra` (sibling names share nothing but the name). Person.favorite is a to-one
/// into the hierarchy; Post.tags a many-to-many declared on the parent.
@Suite struct EntityInheritanceTests {
    static func model(hierarchy: Bool = true) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(name: "posts", destination: "Post", inverse: "author", toMany: true),
                    RelationshipDescription(name: "favorite", destination: "Post", inverse: "fans"),
                ]),
            EntityDescription(
                name: "Post",
                attributes: [AttributeDescription(name: "slug", type: .string), AttributeDescription(name: "title", type: .string)],
                relationships: [
                    RelationshipDescription(name: "author", destination: "Person", inverse: "posts"),
                    RelationshipDescription(name: "fans", destination: "Person", inverse: "favorite", toMany: true),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "posts", toMany: true),
                ],
                uniquenessConstraints: [["slug"]], isAbstract: hierarchy),
            EntityDescription(
                name: "Photo",
                attributes: [AttributeDescription(name: "url", type: .string), AttributeDescription(name: "extra", type: .integer64)],
                parent: hierarchy ? "Post" : nil),
            EntityDescription(
                name: "Note",
                attributes: [AttributeDescription(name: "body", type: .string), AttributeDescription(name: "extra", type: .string)],
                parent: hierarchy ? "Post" : nil),
            EntityDescription(name: "Memo", attributes: [AttributeDescription(name: "priority", type: .integer64)], parent: hierarchy ? "Note" : nil),
            EntityDescription(
                name: "Tag",
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "posts", destination: "Post", inverse: "tags", toMany: true)]),
        ])
    }

    static func insert(_ ctx: ManagedObjectContext, _ entity: String, _ values: [String: Any]) throws -> ManagedObject {
        let object = try ctx.insertNewObject(forEntityName: entity)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try object.setValue(value, forKey: key) }
        return object
    }

    /// Two photos, two notes, one memo, saved; slugs p1 p2 n1 n2 m1.
    static func seed(_ stack: TestStack) throws {
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try insert(ctx, "Photo", ["slug": "p1", "url": "u1", "extra": 7])
            _ = try insert(ctx, "Note", ["slug": "n1", "body": "b1", "extra": "x"])
            _ = try insert(ctx, "Photo", ["slug": "p2", "url": "u2"])
            _ = try insert(ctx, "Memo", ["slug": "m1", "body": "b2", "priority": 3])
            _ = try insert(ctx, "Note", ["slug": "n2", "body": "b3"])
            try ctx.save()
        }
    }

    static func slugs(_ ctx: ManagedObjectContext, _ entity: String, subentities: Bool = true) throws -> [String] {
        var request = FetchRequest(entityName: entity, sortDescriptors: [ObjectSortDescriptor("slug")])
        request.includesSubentities = subentities
        return try ctx.fetch(request).map { "\($0.entity.name):\($0.value(forKey: "slug") as? String ?? "-")" }
    }

    // MARK: Model (§11.1)

    @Test("§11.1: superentity, subentities, isAbstract and isKindOf; a sub-entity inherits properties and constraints after its parent's")
    func modelResolvesTheHierarchy() throws {
        let model = try Self.model()
        let post = try #require(model.entity(named: "Post")), photo = try #require(model.entity(named: "Photo"))
        let note = try #require(model.entity(named: "Note")), memo = try #require(model.entity(named: "Memo"))
        #expect(post.isAbstract && !photo.isAbstract)
        #expect(photo.superentity === post && memo.superentity === note && post.superentity == nil)
        #expect(post.subentities.map(\.name) == ["Photo", "Note"])
        #expect(memo.isKindOf(entity: post) && memo.isKindOf(entity: note) && memo.isKindOf(entity: memo))
        #expect(!post.isKindOf(entity: memo) && !photo.isKindOf(entity: note))
        #expect(memo.attributes.map(\.name) == ["slug", "title", "body", "extra", "priority"])
        #expect(memo.relationships.map(\.name) == ["author", "fans", "tags"])
        #expect(memo.uniquenessConstraints == [["slug"]])
        // Z_ENT: roots by name, each followed by the entities below it, siblings by name.
        #expect(model.entities.sorted { $0.entityNumber < $1.entityNumber }.map(\.name) == ["Person", "Post", "Note", "Memo", "Photo", "Tag"])
        // A sub-entity's slots extend its parent's: the same index is the same property.
        #expect(memo.slotIndex(of: "slug") == post.slotIndex(of: "slug") && memo.slotIndex(of: "body") == note.slotIndex(of: "body"))
    }

    @Test("§11.1: the version hash covers the parent and isAbstract")
    func versionHashCoversInheritance() throws {
        let with = try Self.model(hierarchy: true).versionHash
        let without = try Self.model(hierarchy: false).versionHash
        #expect(with != without)
        func one(abstract: Bool) throws -> String {
            try ManagedObjectModel(entities: [EntityDescription(name: "A", attributes: [AttributeDescription(name: "x", type: .string)], isAbstract: abstract)]).versionHash
        }
        #expect(try one(abstract: true) != one(abstract: false))
    }

    @Test("§11.1: the JSON model takes parent and abstract; an unknown parent or a cycle is refused, naming the entity; a sub-entity cannot declare an inherited name again")
    func jsonModelFormat() throws {
        let json = #"{"entities": [{"name": "Shape", "abstract": true, "attributes": [{"name": "area", "type": "double"}]}, {"name": "Circle", "parent": "Shape", "attributes": [{"name": "radius", "type": "double"}]}]}"#
        let model = try ManagedObjectModel(jsonData: Data(json.utf8))
        let circle = try #require(model.entity(named: "Circle"))
        #expect(circle.superentity?.name == "Shape" && circle.superentity?.isAbstract == true && !circle.isAbstract)
        #expect(circle.attributes.map(\.name) == ["area", "radius"])

        let unknown = #"{"entities": [{"name": "Circle", "parent": "Shape"}]}"#
        #expect(throws: ModelError(entity: "Circle", property: nil, "parent entity 'Shape' does not exist")) {
            try ManagedObjectModel(jsonData: Data(unknown.utf8))
        }
        let cycle = #"{"entities": [{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}]}"#
        do {
            _ = try ManagedObjectModel(jsonData: Data(cycle.utf8))
            Issue.record("a cycle of parents was accepted")
        } catch let error as ModelError {
            #expect(error.entity == "A")
            #expect(error.message.contains("its own ancestor") && error.message.contains("A → B → A"))
        }
        let again = #"{"entities": [{"name": "Shape", "attributes": [{"name": "area", "type": "double"}]}, {"name": "Circle", "parent": "Shape", "attributes": [{"name": "area", "type": "double"}]}]}"#
        do {
            _ = try ManagedObjectModel(jsonData: Data(again.utf8))
            Issue.record("an inherited name declared again was accepted")
        } catch let error as ModelError {
            #expect(error.entity == "Circle" && error.property == "area")
        }
    }

    // MARK: Storage (§11.2)

    @Test("§11.2: sub-entity rows share the root's table and key sequence; Z_ENT tells them apart, Z_SUPER names the parent, sibling names get distinct columns")
    func storageLayout() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let tables = try stack.sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' ORDER BY name").map { $0[0].string ?? "" }
        #expect(tables.contains("ZPOST") && !tables.contains("ZPHOTO") && !tables.contains("ZNOTE") && !tables.contains("ZMEMO"))
        let primaryKeys: [[SQLiteValue]] = [
            [.integer(1), .text("Person"), .integer(0)], [.integer(2), .text("Post"), .integer(0)],
            [.integer(3), .text("Note"), .integer(2)], [.integer(4), .text("Memo"), .integer(3)],
            [.integer(5), .text("Photo"), .integer(2)], [.integer(6), .text("Tag"), .integer(0)],
        ]
        #expect(try stack.sql("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT") == primaryKeys)
        // One key sequence, the root's: keys 1…5, drawn per entity in the order the save meets them (the two
        // photos, the two notes, the memo), each row with its own entity's Z_ENT.
        let rows: [[SQLiteValue]] = [
            [.integer(1), .integer(5), .text("p1")], [.integer(2), .integer(5), .text("p2")], [.integer(3), .integer(3), .text("n1")],
            [.integer(4), .integer(3), .text("n2")], [.integer(5), .integer(4), .text("m1")],
        ]
        #expect(try stack.sql("SELECT Z_PK, Z_ENT, ZSLUG FROM ZPOST ORDER BY Z_PK") == rows)
        #expect(try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Post'") == [[.integer(5)]])
        // Note (named first) keeps ZEXTRA; Photo's `extra` is ZEXTRA1.
        let extras: [[SQLiteValue]] = [[.null, .integer(7)], [.text("x"), .null]]
        #expect(try stack.sql("SELECT ZEXTRA, ZEXTRA1 FROM ZPOST WHERE ZSLUG IN ('p1', 'n1') ORDER BY ZSLUG DESC") == extras)
    }

    // MARK: Fetching (§11.3)

    @Test("§11.3: a fetch of a parent returns its sub-entities' objects, each of its own entity, unless includesSubentities is false; counts agree", arguments: [PersistentStoreType.sqlite, .inMemory])
    func fetchIncludesSubentities(type: PersistentStoreType) throws {
        let stack = try TestStack(model: Self.model(), type: type)
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            #expect(try Self.slugs(ctx, "Post") == ["Memo:m1", "Note:n1", "Note:n2", "Photo:p1", "Photo:p2"])
            #expect(try Self.slugs(ctx, "Note") == ["Memo:m1", "Note:n1", "Note:n2"])
            #expect(try Self.slugs(ctx, "Note", subentities: false) == ["Note:n1", "Note:n2"])
            #expect(try Self.slugs(ctx, "Post", subentities: false) == [])
            var request = FetchRequest(entityName: "Note")
            #expect(try ctx.count(for: request) == 3)
            request.includesSubentities = false
            #expect(try ctx.count(for: request) == 2)
            // Values are read as the row's entity: a memo's own attribute, a photo's column of a shared name.
            let memo = try #require(try ctx.fetch(FetchRequest(entityName: "Post", predicate: .compare("slug", .equalTo, "m1"))).first)
            #expect(memo.entity.name == "Memo" && memo.value(forKey: "priority") as? Int64 == 3 && memo.value(forKey: "body") as? String == "b2")
            let photo = try #require(try ctx.fetch(FetchRequest(entityName: "Post", predicate: .compare("slug", .equalTo, "p1"))).first)
            #expect(photo.value(forKey: "extra") as? Int64 == 7)
        }
    }

    @Test("§11.3: pending inserts and deletes are overlaid by kind: a parent's fetch sees its sub-entities' unsaved objects, not with includesSubentities false")
    func overlayIncludesSubentities() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Memo", ["slug": "m2"])
            _ = try Self.insert(ctx, "Photo", ["slug": "p3"])
            let n1 = try #require(try ctx.fetch(FetchRequest(entityName: "Note", predicate: .compare("slug", .equalTo, "n1"))).first)
            ctx.delete(n1)
            #expect(try Self.slugs(ctx, "Post") == ["Memo:m1", "Memo:m2", "Note:n2", "Photo:p1", "Photo:p2", "Photo:p3"])
            #expect(try Self.slugs(ctx, "Note") == ["Memo:m1", "Memo:m2", "Note:n2"])
            #expect(try Self.slugs(ctx, "Note", subentities: false) == ["Note:n2"])
            #expect(try ctx.count(for: FetchRequest(entityName: "Post")) == 6)
        }
    }

    @Test("§11.3: references name the concrete entity: a to-one into the hierarchy, a to-many and a many-to-many to the parent")
    func referencesNameTheConcreteEntity() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let writer = stack.context()
        try writer.performAndWait {
            let person = try Self.insert(writer, "Person", ["name": "ann"])
            let tag = try Self.insert(writer, "Tag", ["name": "t"])
            let posts = try writer.fetch(FetchRequest(entityName: "Post", sortDescriptors: [ObjectSortDescriptor("slug")]))
            let memo = try #require(posts.first { $0.entity.name == "Memo" })
            try person.setValue(memo, forKey: "favorite")
            for post in posts where post.entity.name != "Note" {
                try post.setValue(person, forKey: "author")
                try tag.addObject(post, toRelationship: "posts")
            }
            try writer.save()
        }
        // The to-one keeps the destination's Z_ENT beside its key (Z<n><NAME>, n = Post's number).
        #expect(try stack.sql("SELECT ZFAVORITE, Z2FAVORITE FROM ZPERSON") == [[.integer(5), .integer(4)]])
        let reader = stack.context()
        try reader.performAndWait {
            let person = try #require(try reader.fetch(FetchRequest(entityName: "Person")).first)
            let favorite = try #require(person.value(forKey: "favorite") as? ManagedObject)
            #expect(favorite.entity.name == "Memo" && favorite.objectID.entity.name == "Memo")
            #expect(favorite.value(forKey: "priority") as? Int64 == 3)
            let authored = try #require(person.value(forKey: "posts") as? Set<ManagedObject>)
            #expect(authored.map { "\($0.entity.name):\($0.value(forKey: "slug") as? String ?? "")" }.sorted() == ["Memo:m1", "Photo:p1", "Photo:p2"])
            let tag = try #require(try reader.fetch(FetchRequest(entityName: "Tag")).first)
            let tagged = try #require(tag.value(forKey: "posts") as? Set<ManagedObject>)
            #expect(tagged.map(\.entity.name).sorted() == ["Memo", "Photo", "Photo"])
            // The fetched objects are the ones the references name (one object per row).
            let memo = try #require(try reader.fetch(FetchRequest(entityName: "Memo")).first)
            #expect(memo === favorite)
        }
    }

    // MARK: Abstract entities (§11.1, §11.8)

    @Test("§11.8: an abstract entity refuses inserts by name and in a batch insert, naming the entity")
    func abstractEntityRefusesInserts() throws {
        let stack = try TestStack(model: Self.model())
        let ctx = stack.context()
        ctx.performAndWait {
            do {
                _ = try ctx.insertNewObject(forEntityName: "Post")
                Issue.record("an abstract entity's object was inserted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .validation && error.entityName == "Post" && error.message.contains("abstract"))
            } catch { Issue.record("\(error)") }
            do {
                _ = try ctx.execute(BatchInsertRequest(entityName: "Post", objects: [["slug": "x"]]))
                Issue.record("a batch insert into an abstract entity ran")
            } catch let error as ObjectGraphError {
                #expect(error.entityName == "Post" && error.message.contains("abstract"))
            } catch { Issue.record("\(error)") }
        }
        #expect(try stack.sql("SELECT count(*) FROM ZPOST") == [[.integer(0)]])
    }

    @Test("§11.8: inserting an object of an abstract entity is a programmer error: it traps with a message, as Core Data raises")
    func abstractInsertTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let model = try EntityInheritanceTests.model()
            let ctx = ManagedObjectContext(concurrencyType: .privateQueue)
            ctx.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let post = model.entity(named: "Post")!
            ctx.performAndWait { _ = ManagedObject(entity: post, insertInto: ctx) }
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("Post") && text.contains("abstract"))
        }
    }

    // MARK: Batch requests (§11.4)

    @Test("§11.4: batch delete and update on a parent reach its sub-entities' rows; a batch insert into a sub-entity counts under its root")
    func batchRequestsReachTheHierarchy() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            var update = BatchUpdateRequest(entityName: "Note", propertiesToUpdate: ["title": "T"])
            update.resultType = .count
            #expect(try ctx.execute(update).count == 3)  // two notes and the memo
            var delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Post", predicate: .compare("slug", .beginsWith, "p")))
            delete.resultType = .objectIDs
            let deleted = try #require(try ctx.execute(delete).objectIDs)
            #expect(deleted.map(\.entity.name) == ["Photo", "Photo"])
            var insert = BatchInsertRequest(entityName: "Memo", objects: [["slug": "m9", "priority": 1]])
            insert.resultType = .objectIDs
            let inserted = try #require(try ctx.execute(insert).objectIDs)
            #expect(inserted.map(\.entity.name) == ["Memo"] && inserted.map(\.primaryKey) == [6])
        }
        let remaining: [[SQLiteValue]] = [
            [.text("n1"), .text("T")], [.text("n2"), .text("T")], [.text("m1"), .text("T")], [.text("m9"), .null],
        ]
        #expect(try stack.sql("SELECT ZSLUG, ZTITLE FROM ZPOST ORDER BY Z_PK") == remaining)
        #expect(try stack.sql("SELECT Z_ENT FROM ZPOST WHERE ZSLUG = 'm9'") == [[.integer(4)]])
        let maxima: [[SQLiteValue]] = [[.text("Post"), .integer(6)], [.text("Memo"), .integer(0)]]
        #expect(try stack.sql("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME IN ('Post', 'Memo') ORDER BY Z_ENT") == maxima)
    }

    // MARK: Constraints (§11.6)

    @Test("§11.6: a constraint declared on the parent holds across siblings, in one save (context level) and against stored rows")
    func inheritedConstraintSpansSiblings() throws {
        let stack = try TestStack(model: Self.model())
        let ctx = stack.context()
        ctx.performAndWait {
            do {
                _ = try Self.insert(ctx, "Photo", ["slug": "same"])
                _ = try Self.insert(ctx, "Note", ["slug": "same"])
                try ctx.save()
                Issue.record("two siblings saved the same slug")
            } catch let error as ObjectGraphError {
                #expect(error.code == .constraintMerge)
                #expect(error.constraintConflictList.count == 1)  // one report for the inherited constraint
                #expect(error.constraintConflictList.first?.constraint == ["slug"])
                #expect(error.constraintConflictList.first?.conflictingObjects.map(\.entity.name).sorted() == ["Note", "Photo"])
            } catch { Issue.record("\(error)") }
            ctx.rollback()
        }
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Photo", ["slug": "stored"])
            try ctx.save()
        }
        let other = stack.context()
        other.performAndWait {
            do {
                _ = try Self.insert(other, "Memo", ["slug": "stored"])
                try other.save()
                Issue.record("a memo saved a photo's slug")
            } catch let error as ObjectGraphError {
                #expect(error.code == .constraintMerge)
                #expect(error.constraintConflictList.first?.databaseObject?.entity.name == "Photo")
            } catch { Issue.record("\(error)") }
        }
        #expect(try stack.sql("SELECT count(*) FROM ZPOST") == [[.integer(1)]])
    }

    // MARK: Controller and notifications (§11.5)

    @Test("§11.5: a fetched results controller on a parent takes in a sub-entity's new object; with includesSubentities false it does not")
    func controllerFiltersByKind() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let all = FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Note", sortDescriptors: [ObjectSortDescriptor("slug")]), managedObjectContext: ctx)
            var exact = FetchRequest(entityName: "Note", sortDescriptors: [ObjectSortDescriptor("slug")])
            exact.includesSubentities = false
            let notesOnly = FetchedResultsController(fetchRequest: exact, managedObjectContext: ctx)
            let recorders = [FRCRecorder(), FRCRecorder()]
            all.delegate = recorders[0]
            notesOnly.delegate = recorders[1]
            try all.performFetch()
            try notesOnly.performFetch()
            #expect(all.fetchedObjects?.count == 3 && notesOnly.fetchedObjects?.count == 2)
            _ = try Self.insert(ctx, "Memo", ["slug": "m0"])
            ctx.processPendingChanges()
            #expect(all.fetchedObjects?.map { $0.value(forKey: "slug") as? String ?? "" } == ["m0", "m1", "n1", "n2"])
            #expect(recorders[0].take().filter { $0.hasPrefix("insert") }.count == 1)
            #expect(notesOnly.fetchedObjects?.count == 2)
            #expect(recorders[1].take().isEmpty)
        }
    }

    // MARK: Migration (§11.7)

    @Test("§11.7: a migration keeps a hierarchy (rows copied entity by entity); moving an entity into a hierarchy is refused with 134140")
    func migration() throws {
        func version(_ name: String, photoParent: String?, memoField: Bool, previous: [ManagedObjectModel] = []) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "Post", attributes: [AttributeDescription(name: "slug", type: .string)], isAbstract: photoParent != nil),
                EntityDescription(name: "Photo", attributes: [AttributeDescription(name: "url", type: .string)], parent: photoParent),
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "body", type: .string)]
                    + (memoField ? [AttributeDescription(name: "words", type: .integer64, isOptional: false, defaultValue: .integer(5))] : []),
                    parent: "Post"),
            ], versionName: name, previousVersions: previous)
        }
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        // v1 → v2: the hierarchy stays, Note gains an attribute with a default.
        let stack = try TestStack(model: version("v1", photoParent: "Post", memoField: false))
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Photo", ["slug": "p", "url": "u"])
            _ = try Self.insert(ctx, "Note", ["slug": "n", "body": "b"])
            try ctx.save()
        }
        let v2 = try version("v2", photoParent: "Post", memoField: true, previous: [version("v1", photoParent: "Post", memoField: false)])
        let migrated = PersistentStoreCoordinator(managedObjectModel: v2)
        try migrated.addPersistentStore(type: .sqlite, at: stack.url, options: options)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = migrated
        try reader.performAndWait {
            let posts = try reader.fetch(FetchRequest(entityName: "Post", sortDescriptors: [ObjectSortDescriptor("slug")]))
            #expect(posts.map { "\($0.entity.name):\($0.value(forKey: "slug") as? String ?? "")" } == ["Note:n", "Photo:p"])
            #expect(posts[0].value(forKey: "words") as? Int64 == 5 && posts[1].value(forKey: "url") as? String == "u")
        }

        // A store whose Photo had no parent, opened with a version where Photo is a Post: 134140, store untouched.
        let flat = try TestStack(model: version("v1", photoParent: nil, memoField: false))
        let moved = try version("v2", photoParent: "Post", memoField: false, previous: [version("v1", photoParent: nil, memoField: false)])
        let refused = PersistentStoreCoordinator(managedObjectModel: moved)
        do {
            try refused.addPersistentStore(type: .sqlite, at: flat.url, options: options)
            Issue.record("an entity moved into a hierarchy was migrated")
        } catch let error as ObjectGraphError {
            #expect(error.code == .migrationMissingMappingModel && error.entityName == "Photo")
        }
        #expect(try flat.sql("SELECT count(*) FROM sqlite_master WHERE name = 'ZPHOTO'") == [[.integer(1)]])
    }

    static func names(_ objects: [ManagedObject]) -> [String] {
        objects.map { "\($0.entity.name):\($0.value(forKey: "slug") as? String ?? "-")" }
    }

    /// One memo and one note (no photo): rows whose own entity has every key the tests name.
    static func memosOnly(_ type: PersistentStoreType) throws -> TestStack {
        let stack = try TestStack(model: Self.model(), type: type)
        let ctx = stack.context()
        try ctx.performAndWait {
            let memo = try Self.insert(ctx, "Memo", ["slug": "m1", "priority": 3])
            let person = try Self.insert(ctx, "Person", ["name": "ann"])
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

    @Test("§11.2, semantics §4: an object ID names its row's entity: the ID of another entity of the hierarchy (a sibling's, or the abstract parent's) with that key names no object",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func objectIDOfAnotherEntityFindsNoRow(type: PersistentStoreType) throws {
        let stack = try TestStack(model: Self.model(), type: type)
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try #require(try ctx.fetch(FetchRequest(entityName: "Note", predicate: .compare("slug", .equalTo, "n1"))).first)
            let photo = try #require(stack.model.entity(named: "Photo"))
            let sibling = ManagedObjectID(entity: photo, primaryKey: note.objectID.key, storeNumber: note.objectID.storeNumber)
            // A URI naming the abstract parent gives no ID (§11.3, EntityInheritanceTests.uriOfAnAbstractEntityNamesNoID),
            // so the parent's ID is built here as the sibling's is: the store must still find no row for it.
            let parent = ManagedObjectID(entity: try #require(stack.model.entity(named: "Post")), primaryKey: note.objectID.key, storeNumber: note.objectID.storeNumber)
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
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
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

    /// Owner has things (cascade) and pinned (deny), both into the abstract Thing with the sub-entities Box (size
    /// unique among boxes) and Bag; Bin is a Box.
    static func ownerModel() throws -> ManagedObjectModel {
        let json = #"""
        {"entities": [
          {"name": "Owner", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "things", "destination": "Thing", "inverse": "owner", "toMany": true, "deleteRule": "cascade"},
                             {"name": "pinned", "destination": "Thing", "inverse": "pinnedBy", "toMany": true, "deleteRule": "deny"}]},
          {"name": "Bin", "parent": "Box", "attributes": [{"name": "lid", "type": "boolean"}]},
          {"name": "Thing", "abstract": true, "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "owner", "destination": "Owner", "inverse": "things"},
                             {"name": "pinnedBy", "destination": "Owner", "inverse": "pinned"}]},
          {"name": "Box", "parent": "Thing", "attributes": [{"name": "size", "type": "integer64"}], "uniquenessConstraints": [["size"]]},
          {"name": "Bag", "parent": "Thing", "attributes": [{"name": "size", "type": "integer64"}]}
        ]}
        """#
        return try ManagedObjectModel(jsonData: Data(json.utf8))
    }

    @Test("§11.3, semantics §2 delete rules: a to-many into an abstract entity cascades to every sub-entity's objects and deny counts them, in a save and in a batch delete; the inverse is kept on both sides",
          arguments: [false, true])
    func deleteRulesAcrossSubentities(batch: Bool) throws {
        let stack = try TestStack(model: Self.ownerModel())
        let ctx = stack.context()
        try ctx.performAndWait {
            let owner = try Self.insert(ctx, "Owner", ["name": "o"])
            for (entity, title) in [("Box", "box"), ("Bag", "bag"), ("Bin", "bin")] {
                let thing = try Self.insert(ctx, entity, ["title": title])
                try owner.addObject(thing, toRelationship: "things")
                #expect((thing.value(forKey: "owner") as? ManagedObject) === owner)
            }
            let keeper = try Self.insert(ctx, "Owner", ["name": "k"])
            let pinned = try Self.insert(ctx, "Bag", ["title": "pinned"])
            try keeper.addObject(pinned, toRelationship: "pinned")
            try ctx.save()
        }
        let deleter = stack.context()
        try deleter.performAndWait {
            if batch {
                _ = try deleter.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Owner", predicate: .compare("name", .equalTo, "o"))))
                do {
                    _ = try deleter.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Owner", predicate: .compare("name", .equalTo, "k"))))
                    Issue.record("deny did not see the pinned bag")
                } catch let error as ObjectGraphError { #expect(error.code == .relationshipDeniedDelete) }
            } else {
                let owners = try deleter.fetch(FetchRequest(entityName: "Owner", sortDescriptors: [ObjectSortDescriptor("name")]))
                #expect(owners.map { $0.value(forKey: "name") as? String } == ["k", "o"])
                deleter.delete(owners[1])
                try deleter.save()
                deleter.delete(owners[0])
                do {
                    try deleter.save()
                    Issue.record("deny did not see the pinned bag")
                } catch let error as ObjectGraphError { #expect(error.code == .relationshipDeniedDelete) }
                deleter.rollback()
            }
        }
        let left: [[SQLiteValue]] = [[.text("pinned")]]
        #expect(try stack.sql("SELECT ZTITLE FROM ZTHING ORDER BY Z_PK") == left)
        #expect(try stack.sql("SELECT ZNAME FROM ZOWNER") == [[.text("k")]])
    }

    @Test("§11.6: a constraint declared on a sub-entity holds among its own objects and those below it (a partial unique index), not its siblings', in both stores, in one save and against stored rows",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func subentityConstraintIsPartial(type: PersistentStoreType) throws {
        let stack = try TestStack(model: Self.ownerModel(), type: type)
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Box", ["size": 1])
            _ = try Self.insert(ctx, "Bag", ["size": 1])  // a sibling: no constraint
            try ctx.save()
        }
        for (entity, collides) in [("Bag", false), ("Bin", true), ("Box", true)] {
            let other = stack.context()
            other.performAndWait {
                do {
                    _ = try Self.insert(other, entity, ["size": 1])
                    try other.save()
                    #expect(!collides, "\(entity) saved a box's size")
                } catch let error as ObjectGraphError {
                    #expect(collides && error.code == .constraintMerge, "\(entity): \(error)")
                } catch { Issue.record("\(error)") }
            }
        }
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Bin", ["size": 5])
            _ = try Self.insert(ctx, "Box", ["size": 5])
            #expect(throws: ObjectGraphError.self) { try ctx.save() }
            ctx.rollback()
            var request = FetchRequest(entityName: "Thing")
            request.includesSubentities = true
            #expect(try ctx.count(for: request) == 3)
        }
    }

    @Test("§11.4: a batch delete by object IDs takes one entity, as Core Data documents (mixing entities is an error), even within one hierarchy")
    func batchDeleteByIDsTakesOneEntity() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let ids = try ctx.fetchObjectIDs(FetchRequest(entityName: "Note"))
            #expect(Set(ids.map(\.entity.name)) == ["Note", "Memo"])
            #expect(throws: ObjectGraphError.self) { try ctx.execute(BatchDeleteRequest(objectIDs: ids)) }
            var one = BatchDeleteRequest(objectIDs: ids.filter { $0.entity.name == "Memo" })
            one.resultType = .count
            #expect(try ctx.execute(one).count == 1)
        }
    }

    @Test("§11.3: prefetching a to-many into the hierarchy, a nested context's fetch and a section count all see each object under its own entity")
    func prefetchNestedAndSections() throws {
        let stack = try TestStack(model: Self.ownerModel())
        let ctx = stack.context()
        try ctx.performAndWait {
            let owner = try Self.insert(ctx, "Owner", ["name": "o"])
            for (entity, size) in [("Box", 1), ("Bag", 2), ("Bin", 3)] {
                try owner.addObject(try Self.insert(ctx, entity, ["size": size, "title": entity]), toRelationship: "things")
            }
            try ctx.save()
        }
        let reader = stack.context()
        try reader.performAndWait {
            var request = FetchRequest(entityName: "Owner")
            request.relationshipKeyPathsForPrefetching = ["things"]
            let owner = try #require(try reader.fetch(request).first)
            let things = try #require(owner.value(forKey: "things") as? Set<ManagedObject>)
            #expect(things.map { "\($0.entity.name):\($0.value(forKey: "title") as? String ?? "")" }.sorted() == ["Bag:Bag", "Bin:Bin", "Box:Box"])
            let sections = FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Thing", sortDescriptors: [ObjectSortDescriptor("title")]),
                managedObjectContext: reader, sectionNameKeyPath: "title")
            try sections.performFetch()
            #expect(sections.sections?.map(\.numberOfObjects) == [1, 1, 1])
        }
        // A child context of the reader (run outside the reader's queue: the child's fetch asks its parent).
        let child = stack.child(of: reader)
        try child.performAndWait {
            _ = try Self.insert(child, "Bin", ["title": "new"])
            var boxes = FetchRequest(entityName: "Box", sortDescriptors: [ObjectSortDescriptor("title")])
            #expect(try child.fetch(boxes).map(\.entity.name) == ["Bin", "Box", "Bin"])
            boxes.includesSubentities = false
            #expect(try child.fetch(boxes).map(\.entity.name) == ["Box"])
            #expect(try child.count(for: boxes) == 1)
        }
    }

    @Test("§11.2, §11.4: a batch delete by object IDs deletes only rows of the IDs' own entity: a sibling's ID with a note's key deletes nothing")
    func batchDeleteByIDOfAnotherEntityDeletesNothing() throws {
        let stack = try TestStack(model: Self.model())
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try #require(try ctx.fetchObjectIDs(FetchRequest(entityName: "Note", predicate: .compare("slug", .equalTo, "n1"))).first)
            let photo = try #require(stack.model.entity(named: "Photo"))
            var delete = BatchDeleteRequest(objectIDs: [ManagedObjectID(entity: photo, primaryKey: note.key, storeNumber: note.storeNumber)])
            delete.resultType = .count
            #expect(try ctx.execute(delete).count == 0)
        }
        #expect(try stack.sql("SELECT count(*) FROM ZPOST WHERE ZSLUG = 'n1'") == [[.integer(1)]])
    }

    @Test("§11.3, semantics §4: an object ID names a concrete entity: a URI naming an abstract entity gives no ID (nil, as for an unknown entity), while the same key under the concrete entity does",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func uriOfAnAbstractEntityNamesNoID(type: PersistentStoreType) throws {
        let stack = try TestStack(model: Self.model(), type: type)
        try Self.seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try #require(try ctx.fetch(FetchRequest(entityName: "Note", predicate: .compare("slug", .equalTo, "n1"))).first)
            let uri = note.objectID.uriRepresentation.absoluteString
            #expect(try #require(stack.model.entity(named: "Post")).isAbstract)
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: URL(string: uri.replacingOccurrences(of: "/Note/", with: "/Post/"))!) == nil)
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: note.objectID.uriRepresentation) == note.objectID)
            // A concrete parent (Note, whose sub-entity is Memo) still gives an ID.
            let memo = try #require(try ctx.fetch(FetchRequest(entityName: "Memo")).first)
            let asNote = URL(string: memo.objectID.uriRepresentation.absoluteString.replacingOccurrences(of: "/Memo/", with: "/Note/"))!
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: asNote)?.entity.name == "Note")
        }
    }

    @Test("§11.3: a parent's fetch naming a sub-entity's key is refused naming the parent whatever the store holds: no stored row (an unsaved Memo pending), or rows a predicate's first clause already rules out",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func parentFetchRefusesSubentityKeysWithoutRowsToCheck(type: PersistentStoreType) throws {
        let stack = try TestStack(model: Self.model(), type: type)
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Memo", ["slug": "m1", "priority": 3])  // pending only: the store holds no row
            var requests = [
                FetchRequest(entityName: "Post", predicate: .compare("priority", .equalTo, 3)),
                FetchRequest(entityName: "Post", sortDescriptors: [ObjectSortDescriptor("priority")]),
                FetchRequest(entityName: "Post", predicate: .and([.compare("slug", .equalTo, "none"), .compare("priority", .equalTo, 3)])),
                FetchRequest(entityName: "Person", predicate: .compare("favorite.priority", .equalTo, 3)),
            ]
            for n in requests.indices { requests[n].includesPendingChanges = true }
            func check(_ when: String) {
                for request in requests {
                    do {
                        let found = try ctx.fetch(request)
                        Issue.record("\(type), \(when): \(request.entityName) fetched \(found.count) with a key of Memo")
                    } catch let error as ObjectGraphError {
                        #expect(error.code == .invalidFetchRequest && error.message.contains("priority"), "\(type), \(when)")
                        if request.entityName == "Post" { #expect(error.entityName == "Post" && error.propertyName == "priority", "\(type), \(when)") }
                    } catch { Issue.record("\(error)") }
                    // A count has no order: its sort is neither run nor checked (the SQLite store's count ignores it).
                    if request.sortDescriptors.isEmpty {
                        #expect(throws: ObjectGraphError.self, "\(type), \(when): count") { try ctx.count(for: request) }
                    }
                }
            }
            check("no stored row")
            try ctx.save()
            _ = try Self.insert(ctx, "Note", ["slug": "n1"])
            try ctx.save()
            check("stored rows")  // the first clause of the AND rules every stored row out
        }
    }
}
