import Foundation
import Testing
@testable import ObjectGraph

/// Ordered to-many relationships (Docs/coredata-behaviour.md §12): the model, the store's order columns, the
/// object's order and its mutations, and the order through saves, children, merges, undo and migration.
@Suite struct OrderedRelationshipTests {
    /// Playlist.tracks, ordered one-to-many (inverse Track.playlist); Board.pins, ordered many-to-many (inverse
    /// Pin.boards, unordered), as a model file gives them.
    static func entities(ordered: Bool = true) -> [ModelFile.Entity] {
        var tracks = ModelFile.Relationship(name: "tracks", destination: "Track", inverse: "playlist", toMany: true)
        tracks.ordered = ordered
        var pins = ModelFile.Relationship(name: "pins", destination: "Pin", inverse: "boards", toMany: true)
        pins.ordered = ordered
        return [
            ModelFile.Entity(name: "Playlist", attributes: [.init(name: "name", type: .string)], relationships: [tracks]),
            ModelFile.Entity(name: "Track", attributes: [.init(name: "title", type: .string)],
                             relationships: [.init(name: "playlist", destination: "Playlist", inverse: "tracks")]),
            ModelFile.Entity(name: "Board", attributes: [.init(name: "name", type: .string)], relationships: [pins]),
            ModelFile.Entity(name: "Pin", attributes: [.init(name: "title", type: .string)],
                             relationships: [.init(name: "boards", destination: "Board", inverse: "pins", toMany: true)]),
        ]
    }

    static func model(ordered: Bool = true) throws -> ManagedObjectModel {
        try ManagedObjectModel(file: ModelFile(entities: entities(ordered: ordered)))
    }

    static func stack(_ type: PersistentStoreType = .sqlite) throws -> TestStack {
        try TestStack(model: try model(), type: type)
    }

    /// A saved playlist "p" with tracks t1…tn in that order; returns the playlist's ID.
    @discardableResult
    static func seed(_ stack: TestStack, tracks n: Int) throws -> ManagedObjectID {
        let ctx = stack.context()
        return try ctx.performAndWait {
            let playlist = ManagedObject(entity: stack.model.entity(named: "Playlist")!, insertInto: ctx)
            try playlist.setValue("p", forKey: "name")
            var tracks: [ManagedObject] = []
            for i in 1...n {
                let track = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
                try track.setValue("t\(i)", forKey: "title")
                tracks.append(track)
            }
            try playlist.setValue(tracks, forKey: "tracks")
            try ctx.save()
            return playlist.objectID
        }
    }

    static func titles(_ object: ManagedObject, _ key: String = "tracks") throws -> [String] {
        try object.orderedObjects(forRelationship: key).map { $0.value(forKey: "title") as? String ?? "?" }
    }

    static func readTitles(_ stack: TestStack, _ id: ManagedObjectID, coordinator: PersistentStoreCoordinator? = nil) throws -> [String] {
        let ctx = stack.context(coordinator)
        return try ctx.performAndWait { try titles(try ctx.existingObject(with: id)) }
    }

    // MARK: §12.1 The model

    @Test("A model file's ordered flag makes an ordered relationship; ordered changes the version hash only when set (§12.1)")
    func modelReadsOrdered() throws {
        let ordered = try Self.model()
        let unordered = try Self.model(ordered: false)
        #expect(ordered.entity(named: "Playlist")!.relationship(named: "tracks")!.isOrdered)
        #expect(!unordered.entity(named: "Playlist")!.relationship(named: "tracks")!.isOrdered)
        #expect(ordered.versionHash != unordered.versionHash)
        var entities = Self.entities(ordered: false)
        entities[0].relationships![0].ordered = nil
        #expect(try ManagedObjectModel(file: ModelFile(entities: entities)).versionHash == unordered.versionHash)
    }

    @Test("An ordered to-one, or an ordered transient relationship, is refused at model load, naming the entity and relationship (§12.1)")
    func orderedToOneRefused() throws {
        var entities = Self.entities()
        entities[1].relationships![0].ordered = true
        #expect { try ManagedObjectModel(file: ModelFile(entities: entities)) } throws: { error in
            guard let error = error as? ModelError else { return false }
            return error.entity == "Track" && error.property == "playlist" && error.description.contains("cannot be ordered")
        }
        // A transient relationship keeps no order either: it is never stored.
        let transient = [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "bs", destination: "B", inverse: "a", toMany: true, isTransient: true, isOrdered: true)]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "bs", isTransient: true)]),
        ]
        #expect { try ManagedObjectModel(entities: transient) } throws: { ($0 as? ModelError)?.property == "bs" }
    }

    // MARK: §12.2 Storage

    @Test("An ordered one-to-many keeps Z_FOK_<INVERSE> beside the foreign key; an ordered many-to-many's join table keeps Z_FOK_<n><NAME> (§12.2)")
    func orderColumnsInTheStore() throws {
        let stack = try Self.stack()
        try Self.seed(stack, tracks: 2)
        let track = try slCLI(stack.url.path, "SELECT group_concat(name, ',') FROM pragma_table_info('ZTRACK')")
        #expect(track == "Z_PK,Z_ENT,Z_OPT,ZTITLE,ZPLAYLIST,Z_FOK_PLAYLIST")
        let board = stack.model.entity(named: "Board")!, pin = stack.model.entity(named: "Pin")!
        let join = "Z_\(board.entityNumber)PINS"
        let columns = try slCLI(stack.url.path, "SELECT group_concat(name, ',') FROM pragma_table_info('\(join)')")
        #expect(columns == "Z_\(board.entityNumber)BOARDS,Z_\(pin.entityNumber)PINS,Z_FOK_\(pin.entityNumber)PINS")
        #expect(try slCLI(stack.url.path, "SELECT group_concat(Z_FOK_PLAYLIST, ',') FROM (SELECT Z_FOK_PLAYLIST FROM ZTRACK ORDER BY Z_PK)") == "1,2")
    }

    @Test("A model without ordered relationships has no order column (§12.2)")
    func unorderedModelHasNoOrderColumns() throws {
        let stack = try TestStack(model: try Self.model(ordered: false))
        try Self.seed(stack, tracks: 1)
        let track = try slCLI(stack.url.path, "SELECT group_concat(name, ',') FROM pragma_table_info('ZTRACK')")
        #expect(track == "Z_PK,Z_ENT,Z_OPT,ZTITLE,ZPLAYLIST")
    }

    @Test("The relationship fault reads members in their stored places, not by primary key (§12.2)", arguments: [PersistentStoreType.sqlite, .inMemory])
    func faultReadsInOrder(_ type: PersistentStoreType) throws {
        let stack = try Self.stack(type)
        let ctx = stack.context()
        let id = try ctx.performAndWait {
            let playlist = ManagedObject(entity: stack.model.entity(named: "Playlist")!, insertInto: ctx)
            let tracks = (1...4).map { i in
                let t = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
                try? t.setValue("t\(i)", forKey: "title")
                return t
            }
            try playlist.setValue([tracks[2], tracks[0], tracks[3], tracks[1]], forKey: "tracks")
            try ctx.save()
            return playlist.objectID
        }
        if type == .sqlite {
            #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t3", "t1", "t4", "t2"])
        }
        let other = stack.context()
        try other.performAndWait {
            let playlist = try other.existingObject(with: id)
            #expect(try Self.titles(playlist) == ["t3", "t1", "t4", "t2"])
            #expect(playlist.value(forKey: "tracks") is [ManagedObject])
        }
    }

    // MARK: §12.3 The object's order

    @Test("Insert at, remove at, move and replace keep the order and the inverses (§12.3)")
    func mutations() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            let track = { (title: String) -> ManagedObject in
                let t = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
                try? t.setValue(title, forKey: "title")
                return t
            }
            let t4 = track("t4")
            try playlist.insertObject(t4, at: 1, inRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t1", "t4", "t2", "t3"])
            #expect(t4.value(forKey: "playlist") as? ManagedObject === playlist)
            try playlist.moveObject(at: 3, to: 0, inRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t3", "t1", "t4", "t2"])
            let removed = try playlist.orderedObjects(forRelationship: "tracks")[1]
            try playlist.removeObject(at: 1, fromRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t3", "t4", "t2"])
            #expect(removed.value(forKey: "playlist") == nil)
            let t5 = track("t5")
            try playlist.replaceObject(at: 2, with: t5, inRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t3", "t4", "t5"])
            try playlist.addObject(track("t6"), toRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t3", "t4", "t5", "t6"])
            #expect { try playlist.removeObject(at: 9, fromRelationship: "tracks") } throws: { ($0 as? ObjectGraphError)?.code == .validation }
            #expect { try playlist.insertObject(t5, at: 0, inRelationship: "name") } throws: { ($0 as? ObjectGraphError)?.code == .validation }
            try ctx.save()
        }
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t3", "t4", "t5", "t6"])
    }

    @Test("Inserting an object already in the relationship is ignored, as an NSOrderedSet holds it once; an array naming one twice keeps its first place (§12.3)")
    func insertOfAMemberIgnored() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            let tracks = try playlist.orderedObjects(forRelationship: "tracks")
            try playlist.insertObject(tracks[2], at: 0, inRelationship: "tracks")
            #expect(try Self.titles(playlist) == ["t1", "t2", "t3"])
            #expect(!playlist.hasChanges)
            try playlist.setValue([tracks[1], tracks[0], tracks[1]], forKey: "tracks")
            #expect(try Self.titles(playlist) == ["t2", "t1"])
        }
    }

    @Test("A change of order alone dirties the owner, appears in changedValues and bumps its version at save (§12.3)")
    func orderAloneIsAChange() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            let version = playlist.snapshotVersion
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")
            #expect(ctx.updatedObjects.contains(playlist))
            let changed = try #require(playlist.changedValues()["tracks"] as? [ManagedObject])
            #expect(changed.map { $0.value(forKey: "title") as? String } == ["t3", "t1", "t2"])
            try playlist.moveObject(at: 0, to: 2, inRelationship: "tracks")
            #expect(!playlist.hasPersistentChanges)  // back to the stored order: no change
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")
            try ctx.save()
            #expect(playlist.snapshotVersion == version + 1)
        }
    }

    @Test("Setting the inverse to-one appends the object at the end of the ordered relationship (§12.3)")
    func inverseAppendsAtTheEnd() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            let track = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
            try track.setValue("t3", forKey: "title")
            try track.setValue(playlist, forKey: "playlist")  // the relationship is still a fault
            #expect(try Self.titles(playlist) == ["t1", "t2", "t3"])
            try ctx.save()
        }
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t1", "t2", "t3"])
    }

    // MARK: §12.4 Through the stack

    @Test("A save writes the places that changed only, one row update each, with the owner's row (§12.4)", arguments: [PersistentStoreType.sqlite, .inMemory])
    func saveWritesChangedPlaces(_ type: PersistentStoreType) throws {
        let stack = try Self.stack(type)
        let id = try Self.seed(stack, tracks: 5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            try playlist.moveObject(at: 1, to: 2, inRelationship: "tracks")  // t1 t3 t2 t4 t5: two places change
            var before = stack.coordinator.counters
            try ctx.save()
            #expect(stack.coordinator.counters.rowsUpdated - before.rowsUpdated == 1 + 2)
            let track = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
            try track.setValue("t6", forKey: "title")
            try playlist.addObject(track, toRelationship: "tracks")
            before = stack.coordinator.counters
            try ctx.save()
            // The owner's row and the new row's place (the insert itself is a row inserted).
            #expect(stack.coordinator.counters.rowsUpdated - before.rowsUpdated == 1 + 1)
            #expect(stack.coordinator.counters.rowsInserted - before.rowsInserted == 1)
        }
        #expect(try Self.readTitles(stack, id, coordinator: type == .sqlite ? try stack.secondCoordinator() : nil) == ["t1", "t3", "t2", "t4", "t5", "t6"])
    }

    @Test("An ordered many-to-many keeps its order in the join table (§12.4)", arguments: [PersistentStoreType.sqlite, .inMemory])
    func manyToManyOrder(_ type: PersistentStoreType) throws {
        let stack = try Self.stack(type)
        let ctx = stack.context()
        let id = try ctx.performAndWait {
            let board = ManagedObject(entity: stack.model.entity(named: "Board")!, insertInto: ctx)
            let pins = (1...3).map { i in
                let p = ManagedObject(entity: stack.model.entity(named: "Pin")!, insertInto: ctx)
                try? p.setValue("p\(i)", forKey: "title")
                return p
            }
            try board.setValue([pins[1], pins[2], pins[0]], forKey: "pins")
            try ctx.save()
            try board.moveObject(at: 2, to: 0, inRelationship: "pins")
            try ctx.save()
            return board.objectID
        }
        let other = stack.context()
        try other.performAndWait {
            let board = try other.existingObject(with: id)
            #expect(try Self.titles(board, "pins") == ["p1", "p2", "p3"])
            let pin = try #require(board.orderedObjects(forRelationship: "pins").first)
            #expect((pin.value(forKey: "boards") as? Set<ManagedObject>) == [board])
        }
    }

    @Test("A many-to-many ordered on both sides keeps one order column per side, each side's order its own (§12.2)")
    func manyToManyOrderedBothSides() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Doc", attributes: [AttributeDescription(name: "title", type: .string)],
                              relationships: [RelationshipDescription(name: "parts", destination: "Part", inverse: "docs", toMany: true, isOrdered: true)]),
            EntityDescription(name: "Part", attributes: [AttributeDescription(name: "title", type: .string)],
                              relationships: [RelationshipDescription(name: "docs", destination: "Doc", inverse: "parts", toMany: true, isOrdered: true)]),
        ])
        let stack = try TestStack(model: model)
        let ctx = stack.context()
        let (docID, partID) = try ctx.performAndWait {
            let make = { (entity: String, title: String) -> ManagedObject in
                let o = ManagedObject(entity: model.entity(named: entity)!, insertInto: ctx)
                try? o.setValue(title, forKey: "title")
                return o
            }
            let (d1, d2) = (make("Doc", "d1"), make("Doc", "d2"))
            let (p1, p2) = (make("Part", "p1"), make("Part", "p2"))
            try d1.setValue([p2, p1], forKey: "parts")
            try d2.setValue([p1], forKey: "parts")  // p1.docs: d1 then d2, appended from the inverse side
            try p1.moveObject(at: 1, to: 0, inRelationship: "docs")
            try ctx.save()
            return (d1.objectID, p1.objectID)
        }
        let doc = model.entity(named: "Doc")!, part = model.entity(named: "Part")!
        let columns = try slCLI(stack.url.path, "SELECT group_concat(name, ',') FROM pragma_table_info('Z_\(doc.entityNumber)PARTS')")
        #expect(columns == "Z_\(doc.entityNumber)DOCS,Z_\(part.entityNumber)PARTS,Z_FOK_\(part.entityNumber)PARTS,Z_FOK_\(doc.entityNumber)DOCS")
        let other = stack.context(try stack.secondCoordinator())
        let read = try other.performAndWait {
            (try Self.titles(try other.existingObject(with: docID), "parts"), try Self.titles(try other.existingObject(with: partID), "docs"))
        }
        #expect(read.0 == ["p2", "p1"])
        #expect(read.1 == ["d2", "d1"])
    }

    @Test("A child context's save carries the order to its parent and on to the store (§12.4)")
    func childPushCarriesOrder() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let parent = stack.context()
        let child = stack.child(of: parent)
        try child.performAndWait {
            let playlist = try child.existingObject(with: id)
            try playlist.moveObject(at: 0, to: 2, inRelationship: "tracks")
            try child.save()
        }
        try parent.performAndWait {
            let playlist = try parent.existingObject(with: id)
            #expect(try Self.titles(playlist) == ["t2", "t3", "t1"])
            #expect(parent.updatedObjects.contains(playlist))
            try parent.save()
        }
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t2", "t3", "t1"])
    }

    @Test("Undo puts the order back and redo reapplies it (§12.4)")
    func undoRestoresOrder() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let playlist = try ctx.existingObject(with: id)
            _ = try playlist.orderedObjects(forRelationship: "tracks")
            ctx.processPendingChanges()
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")
            ctx.processPendingChanges()
            #expect(try Self.titles(playlist) == ["t3", "t1", "t2"])
            ctx.undo()
            #expect(try Self.titles(playlist) == ["t1", "t2", "t3"])
            #expect(!ctx.updatedObjects.contains(playlist))
            ctx.redo()
            #expect(try Self.titles(playlist) == ["t3", "t1", "t2"])
        }
    }

    @Test("A did-save merge brings another context's new order to a loaded owner (§12.4)")
    func didSaveMergeBringsOrder() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let receiver = stack.context()
        try receiver.performAndWait { _ = try Self.titles(try receiver.existingObject(with: id)) }
        let saver = stack.context()
        let saved = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: saver)
        try saver.performAndWait {
            try saver.existingObject(with: id).moveObject(at: 0, to: 2, inRelationship: "tracks")
            try saver.save()
        }
        let note = try #require(saved.notes.first)
        receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        let merged = try receiver.performAndWait { try Self.titles(try receiver.existingObject(with: id)) }
        #expect(merged == ["t2", "t3", "t1"])
    }

    @Test("A refresh with merge of a changed owner takes the store's new members and keeps the local order (§12.4)")
    func refreshKeepsLocalOrder() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")  // t3 t1 t2, unsaved
        }
        let writer = stack.context(try stack.secondCoordinator())
        try writer.performAndWait {
            let playlist = try writer.existingObject(with: id)
            let track = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: writer)
            try track.setValue("t4", forKey: "title")
            try playlist.addObject(track, toRelationship: "tracks")
            try writer.save()
        }
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            ctx.refresh(playlist, mergeChanges: true)
            #expect(try Self.titles(playlist) == ["t3", "t1", "t2", "t4"])
        }
    }

    @Test("A merge conflict resolved by property, object trump, keeps the local order; store trump the store's (§12.4)",
          arguments: [true, false])
    func conflictKeepsWinningOrder(objectTrump: Bool) throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 3)
        let policy: MergePolicy = objectTrump ? .mergeByPropertyObjectTrump : .mergeByPropertyStoreTrump
        let ctx = stack.context(policy: policy)
        try ctx.performAndWait {
            let playlist = try ctx.existingObject(with: id)
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")  // t3 t1 t2
        }
        let writer = stack.context()
        try writer.performAndWait {
            let playlist = try writer.existingObject(with: id)
            try playlist.moveObject(at: 0, to: 2, inRelationship: "tracks")  // t2 t3 t1
            try writer.save()
        }
        try ctx.performAndWait { try ctx.save() }
        let expected = objectTrump ? ["t3", "t1", "t2"] : ["t2", "t3", "t1"]
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == expected)
    }

    @Test("A batch delete of members leaves gaps in the places; reads close them and later saves keep the order (§12.4)")
    func batchDeleteGapsClose() throws {
        let stack = try Self.stack()
        let id = try Self.seed(stack, tracks: 5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let doomed = try ctx.fetch(FetchRequest(entityName: "Track", predicate: .in("title", ["t2", "t3"]))).map(\.objectID)
            _ = try ctx.execute(BatchDeleteRequest(objectIDs: doomed))
        }
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t1", "t4", "t5"])
        let editor = stack.context()
        try editor.performAndWait {
            let playlist = try editor.existingObject(with: id)
            let track = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: editor)
            try track.setValue("t6", forKey: "title")
            try playlist.insertObject(track, at: 2, inRelationship: "tracks")  // t1 t4 t6 t5
            try editor.save()
        }
        #expect(try Self.readTitles(stack, id, coordinator: try stack.secondCoordinator()) == ["t1", "t4", "t6", "t5"])
    }

    @Test("Prefetching an ordered relationship installs it in order (§12.4)")
    func prefetchInOrder() throws {
        let stack = try Self.stack()
        let ctx = stack.context()
        let id = try ctx.performAndWait {
            let playlist = ManagedObject(entity: stack.model.entity(named: "Playlist")!, insertInto: ctx)
            let tracks = (1...3).map { i in
                let t = ManagedObject(entity: stack.model.entity(named: "Track")!, insertInto: ctx)
                try? t.setValue("t\(i)", forKey: "title")
                return t
            }
            try playlist.setValue([tracks[2], tracks[1], tracks[0]], forKey: "tracks")
            try ctx.save()
            return playlist.objectID
        }
        let other = stack.context()
        try other.performAndWait {
            var request = FetchRequest(entityName: "Playlist")
            request.relationshipKeyPathsForPrefetching = ["tracks"]
            let playlist = try #require(try other.fetch(request).first)
            #expect(playlist.objectID == id)
            let fired = other.counters.relationshipFaultsFired
            #expect(try Self.titles(playlist) == ["t3", "t2", "t1"])
            #expect(other.counters.relationshipFaultsFired == fired)
        }
    }

    @Test("A lightweight migration to an ordered relationship fills the places by primary key; back to unordered drops the column (§12.5)")
    func migrationAddsAndDropsOrder() throws {
        let directory = try TemporaryStoreDirectory()
        let url = directory.url.appendingPathComponent("m.sqlite")
        func model(_ ordered: Bool, _ version: String, _ previous: [ManagedObjectModel]) throws -> ManagedObjectModel {
            let file = ModelFile(entities: Self.entities(ordered: ordered))
            let entities = try file.entities.map { try $0.makeEntity(class: ManagedObject.self) }
            return try ManagedObjectModel(entities: entities, versionName: version, previousVersions: previous)
        }
        let v1 = try model(false, "v1", [])
        let ctx = try MigrationTests.open(v1, at: url)
        let id = try ctx.performAndWait {
            let playlist = ManagedObject(entity: v1.entity(named: "Playlist")!, insertInto: ctx)
            let board = ManagedObject(entity: v1.entity(named: "Board")!, insertInto: ctx)
            var tracks: [ManagedObject] = [], pins: [ManagedObject] = []
            for i in 1...3 {
                let t = ManagedObject(entity: v1.entity(named: "Track")!, insertInto: ctx)
                try t.setValue("t\(i)", forKey: "title")
                tracks.append(t)
                let p = ManagedObject(entity: v1.entity(named: "Pin")!, insertInto: ctx)
                try p.setValue("p\(i)", forKey: "title")
                pins.append(p)
            }
            try playlist.setValue(Set(tracks), forKey: "tracks")
            try board.setValue(Set(pins), forKey: "pins")
            try ctx.save()
            return (playlist.objectID.primaryKey!, board.objectID.primaryKey!)
        }
        let v2 = try model(true, "v2", [try model(false, "v1", [])])
        let migrated = try MigrationTests.open(v2, at: url)
        try migrated.performAndWait {
            let playlist = try #require(try migrated.fetch(FetchRequest(entityName: "Playlist")).first)
            #expect(playlist.objectID.primaryKey == id.0)
            #expect(try Self.titles(playlist) == ["t1", "t2", "t3"])
            let board = try #require(try migrated.fetch(FetchRequest(entityName: "Board")).first)
            #expect(try Self.titles(board, "pins") == ["p1", "p2", "p3"])
            try playlist.moveObject(at: 2, to: 0, inRelationship: "tracks")
            try migrated.save()
        }
        #expect(try slCLI(url.path, "SELECT group_concat(Z_FOK_PLAYLIST, ',') FROM (SELECT Z_FOK_PLAYLIST FROM ZTRACK ORDER BY Z_PK)") == "2,3,1")
        let v3 = try model(false, "v3", [try model(false, "v1", []), try model(true, "v2", [])])
        let back = try MigrationTests.open(v3, at: url)
        try back.performAndWait {
            let playlist = try #require(try back.fetch(FetchRequest(entityName: "Playlist")).first)
            #expect(Set((playlist.value(forKey: "tracks") as? Set<ManagedObject> ?? []).compactMap { $0.value(forKey: "title") as? String }) == ["t1", "t2", "t3"])
        }
        #expect(try slCLI(url.path, "SELECT group_concat(name, ',') FROM pragma_table_info('ZTRACK')") == "Z_PK,Z_ENT,Z_OPT,ZTITLE,ZPLAYLIST")
    }

    @Test("A migration to ordered ranks an owner's members by primary key across the entities of their hierarchy (§12.5)")
    func migrationRanksAcrossAHierarchy() throws {
        let directory = try TemporaryStoreDirectory()
        let url = directory.url.appendingPathComponent("h.sqlite")
        func model(_ ordered: Bool, _ version: String, _ previous: [ManagedObjectModel]) throws -> ManagedObjectModel {
            var items = ModelFile.Relationship(name: "items", destination: "Item", inverse: "shelf", toMany: true)
            items.ordered = ordered
            let file = ModelFile(entities: [
                .init(name: "Shelf", relationships: [items]),
                .init(name: "Item", attributes: [.init(name: "title", type: .string)],
                      relationships: [.init(name: "shelf", destination: "Shelf", inverse: "items")]),
                .init(name: "Special", parent: "Item"),
            ])
            let entities = try file.entities.map { try $0.makeEntity(class: ManagedObject.self) }
            return try ManagedObjectModel(entities: entities, versionName: version, previousVersions: previous)
        }
        let v1 = try model(false, "v1", [])
        let ctx = try MigrationTests.open(v1, at: url)
        try ctx.performAndWait {
            let shelf = ManagedObject(entity: v1.entity(named: "Shelf")!, insertInto: ctx)
            var items: [ManagedObject] = []
            for (i, entity) in ["Item", "Special", "Item", "Special"].enumerated() {
                let item = ManagedObject(entity: v1.entity(named: entity)!, insertInto: ctx)
                try item.setValue("i\(i + 1)", forKey: "title")
                items.append(item)
                try ctx.obtainPermanentIDs(for: [item])
            }
            try shelf.setValue(Set(items), forKey: "items")
            try ctx.save()
        }
        let v2 = try model(true, "v2", [try model(false, "v1", [])])
        let migrated = try MigrationTests.open(v2, at: url)
        try migrated.performAndWait {
            let shelf = try #require(try migrated.fetch(FetchRequest(entityName: "Shelf")).first)
            #expect(try Self.titles(shelf, "items") == ["i1", "i2", "i3", "i4"])
        }
    }

    // MARK: §12.6 Sorting

    @Test("A sort on a to-many key, an ordered relationship's included, is refused with a clear error (§12.6)")
    func sortOnToManyRefused() throws {
        let stack = try Self.stack()
        try Self.seed(stack, tracks: 2)
        let ctx = stack.context()
        ctx.performAndWait {
            var request = FetchRequest(entityName: "Playlist")
            request.sortDescriptors = [ObjectSortDescriptor("tracks")]
            #expect { try ctx.fetch(request) } throws: { error in
                guard let error = error as? ObjectGraphError else { return false }
                return error.code == .invalidFetchRequest && error.description.contains("to-many")
            }
        }
    }
}
