import Foundation
import Testing
@testable import ObjectGraph

/// Transient relationships follow the rules of transient attributes (rules 3 to 5 of
/// Docs/core-data-rules.md): not stored, a change to one is a change of the object, carried by a child's save,
/// cleared by refresh without merging and by reset (semantics §2.2 for the child's save, §4 for refresh and reset).
@Suite struct TransientRelationshipTests {
    /// Doc.reviewer (transient to-one) ↔ Reviewer.docs (transient to-many), in the JSON model format.
    static let json = """
    {"entities": [
      {"name": "Doc", "attributes": [{"name": "title", "type": "string"}, {"name": "summary", "type": "string", "transient": true}],
       "relationships": [{"name": "reviewer", "destination": "Reviewer", "inverse": "docs", "transient": true}]},
      {"name": "Reviewer", "attributes": [{"name": "name", "type": "string"}],
       "relationships": [{"name": "docs", "destination": "Doc", "inverse": "reviewer", "toMany": true, "transient": true}]}
    ]}
    """

    private func makeStack() throws -> TestStack {
        try TestStack(model: ManagedObjectModel(jsonData: Data(Self.json.utf8)))
    }

    /// Saves one doc and one reviewer; returns their IDs.
    private func seed(_ stack: TestStack) throws -> (doc: ManagedObjectID, reviewer: ManagedObjectID) {
        let ctx = stack.context()
        return try ctx.performAndWait {
            let doc = try ctx.insertNewObject(forEntityName: "Doc")
            try doc.setValue("d", forKey: "title")
            let reviewer = try ctx.insertNewObject(forEntityName: "Reviewer")
            try reviewer.setValue("r", forKey: "name")
            try ctx.save()
            return (doc.objectID, reviewer.objectID)
        }
    }

    private func docs(_ reviewer: ManagedObject) -> Set<ManagedObject> { reviewer.value(forKey: "docs") as? Set<ManagedObject> ?? [] }
    private func reviewer(_ doc: ManagedObject) -> ManagedObject? { doc.value(forKey: "reviewer") as? ManagedObject }

    // The model format accepts "transient": true on a relationship; the store gets no column and no join table,
    // and the model's version hash does not change (a transient property does not shape the store).
    @Test("The JSON model accepts transient relationships; they are not stored")
    func modelAndStore() throws {
        let stack = try makeStack()
        let doc = try #require(stack.model.entity(named: "Doc"))
        #expect(doc.transientRelationships.map(\.name) == ["reviewer"])
        #expect(doc.transientRelationships[0].isTransient)
        #expect(doc.relationships.isEmpty)
        #expect(doc.relationship(named: "reviewer")?.isTransient == true)
        let columns = try stack.sql("SELECT name FROM pragma_table_info('ZDOC')").map { $0[0] }
        #expect(!columns.contains(.text("ZREVIEWER")))
        let tables = try stack.sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%DOCS%'")
        #expect(tables.isEmpty)
        let plain = try ManagedObjectModel(jsonData: Data("""
        {"entities": [{"name": "Doc", "attributes": [{"name": "title", "type": "string"}]},
                      {"name": "Reviewer", "attributes": [{"name": "name", "type": "string"}]}]}
        """.utf8))
        #expect(plain.versionHash == stack.model.versionHash)
        // A transient relationship needs a transient inverse.
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(jsonData: Data("""
            {"entities": [
              {"name": "A", "relationships": [{"name": "b", "destination": "B", "inverse": "a", "transient": true}]},
              {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "b", "toMany": true}]}]}
            """.utf8))
        }
        // The file format round-trips the flag.
        let file = try JSONDecoder().decode(ModelFile.self, from: Data(Self.json.utf8))
        #expect(file.entities[0].relationships?[0].transient == true)
    }

    // For relationships: setting one (with its inverse) makes both objects updated, lists
    // nothing in changedValues(), and the save writes no SQL; the values outlive the save.
    @Test("A transient relationship change updates both sides; its save writes no SQL (rule 3)")
    func changeIsAnUpdate() throws {
        let stack = try makeStack()
        let ids = try seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let doc = try ctx.existingObject(with: ids.doc)
            let rev = try ctx.existingObject(with: ids.reviewer)
            try doc.setValue(rev, forKey: "reviewer")
            #expect(reviewer(doc) === rev)
            #expect(docs(rev) == [doc])  // inverse maintained
            #expect(doc.isUpdated && rev.isUpdated)
            #expect(ctx.updatedObjects == [doc, rev])
            #expect(doc.changedValues().isEmpty && rev.changedValues().isEmpty)
            let before = stack.coordinator.counters.statements
            try ctx.save()
            #expect(stack.coordinator.counters.statements == before)
            #expect(!ctx.hasChanges)
            #expect(reviewer(doc) === rev)
            try doc.setValue(rev, forKey: "reviewer")  // the value it has: no change
            #expect(!ctx.hasChanges)
            // Clearing the to-many side clears the to-one.
            try rev.setValue(Set<ManagedObject>(), forKey: "docs")
            #expect(reviewer(doc) == nil)
            #expect(ctx.updatedObjects == [doc, rev])
        }
        // Another context sees nothing: it was never stored.
        let other = stack.context()
        try other.performAndWait {
            let doc = try other.existingObject(with: ids.doc)
            #expect(reviewer(doc) == nil)
        }
    }

    // For relationships: a child's save carries the link into its parent; a fresh child that
    // fetches the objects again starts from nothing.
    @Test("A child's save carries transient relationships to its parent (rule 4)")
    func childSaveCarries() throws {
        let stack = try makeStack()
        let ids = try seed(stack)
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        try child.performAndWait {
            let doc = try child.existingObject(with: ids.doc)
            let rev = try child.existingObject(with: ids.reviewer)
            try doc.setValue(rev, forKey: "reviewer")
            let fresh = try child.insertNewObject(forEntityName: "Doc")
            try fresh.setValue(rev, forKey: "reviewer")
            try child.save()
        }
        try parent.performAndWait {
            let doc = try #require(parent.registeredObject(for: ids.doc))
            let rev = try #require(parent.registeredObject(for: ids.reviewer))
            #expect(reviewer(doc) === rev)
            #expect(docs(rev).count == 2)
            #expect(parent.updatedObjects.contains(doc))
            #expect(parent.insertedObjects.count == 1)
        }
        let second = stack.child(of: stack.context())
        try second.performAndWait {
            let doc = try second.existingObject(with: ids.doc)
            #expect(reviewer(doc) == nil)
        }
    }

    // For relationships: refresh(false), refreshAllObjects() and reset() clear the links;
    // refresh(true) keeps them.
    @Test("refresh(false), refreshAllObjects and reset clear transient relationships; refresh(true) keeps them (rule 5)")
    func refreshAndReset() throws {
        let stack = try makeStack()
        let ids = try seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let doc = try ctx.existingObject(with: ids.doc)
            let rev = try ctx.existingObject(with: ids.reviewer)
            try doc.setValue(rev, forKey: "reviewer")
            ctx.refresh(doc, mergeChanges: true)
            #expect(reviewer(doc) === rev)
            #expect(doc.hasChanges)
            ctx.refresh(doc, mergeChanges: false)
            #expect(reviewer(doc) == nil)
            #expect(!doc.hasChanges)
            try doc.setValue(rev, forKey: "reviewer")
            ctx.refreshAllObjects()
            #expect(reviewer(doc) == nil)
            #expect(docs(rev).isEmpty)
            #expect(!ctx.hasChanges)
            try doc.setValue(rev, forKey: "reviewer")
            ctx.reset()
            #expect(reviewer(doc) == nil)
        }
    }

    // Deleting an object takes it out of the transient relationships that name it (nullify), and undo puts a
    // transient link back like any other change.
    @Test("A delete nullifies transient links to the object; undo restores a link")
    func deleteAndUndo() throws {
        let stack = try makeStack()
        let ids = try seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let doc = try ctx.existingObject(with: ids.doc)
            let rev = try ctx.existingObject(with: ids.reviewer)
            try doc.setValue(rev, forKey: "reviewer")
            ctx.processPendingChanges()
            ctx.undo()
            #expect(reviewer(doc) == nil && docs(rev).isEmpty)
            #expect(!ctx.hasChanges)
            ctx.redo()
            #expect(reviewer(doc) === rev)
            ctx.delete(rev)
            ctx.processPendingChanges()
            #expect(reviewer(doc) == nil)
        }
    }

    /// In `context`: inserts a doc and a reviewer, links them through the transient relationship from the to-many
    /// side, sets the doc's transient attribute, and saves `context` (a child: one level up).
    private func insertLinkedPair(in context: ManagedObjectContext) throws -> (doc: ManagedObject, reviewer: ManagedObject) {
        let doc = try context.insertNewObject(forEntityName: "Doc")
        try doc.setValue("d", forKey: "title")
        try doc.setValue("cached", forKey: "summary")
        let rev = try context.insertNewObject(forEntityName: "Reviewer")
        try rev.setValue("r", forKey: "name")
        try rev.setValue(Set([doc]), forKey: "docs")
        try context.save()
        return (doc, rev)
    }

    /// Both sides of the link and the transient attribute, as `context` sees them.
    private func expectLinked(_ pair: (doc: ManagedObject, reviewer: ManagedObject), in context: ManagedObjectContext) {
        #expect(!pair.doc.objectID.isTemporaryID && !pair.reviewer.objectID.isTemporaryID)
        #expect(context.registeredObject(for: pair.doc.objectID) === pair.doc)
        #expect(docs(pair.reviewer) == [pair.doc])
        #expect(reviewer(pair.doc) === pair.reviewer)
        #expect(pair.doc.value(forKey: "summary") as? String == "cached")
    }

    // Docs/coredata-behaviour.md §2.2: a transient link between two objects inserted in a child rides
    // the child's save and then the root's save, which gives both objects permanent IDs; in the root and in the
    // child, both sides still name each other (FreeCoreData testTransientValuesRideAChildSave, two main-queue
    // contexts).
    @Test("Transient links made in a child survive the root's save that gives both objects permanent IDs")
    func transientLinksSurviveTheRootSave() throws {
        let stack = try makeStack()
        let (root, child) = stack.mainQueueRootAndChild(label: "transient main")
        try root.performAndWait {
            let inChild = try insertLinkedPair(in: child)
            let fetched = try root.fetch(FetchRequest(entityName: "Reviewer"))
            #expect(fetched.count == 1)
            let rev = try #require(fetched.first)
            #expect(docs(rev).count == 1)
            let doc = try #require(docs(rev).first)
            try root.save()
            expectLinked((doc, rev), in: root)
            expectLinked(inChild, in: child)
        }
    }

    // Docs/coredata-behaviour.md §2.2: the same through a grandchild, a middle context and a root on
    // private queues; every level keeps the link under the permanent IDs.
    @Test("Transient links made in a grandchild survive the root's save at every level")
    func transientLinksSurviveTheRootSaveFromAGrandchild() throws {
        let stack = try makeStack()
        let root = stack.context(name: "root")
        let middle = stack.child(of: root)
        let child = stack.child(of: middle)
        let inChild = try child.performAndWait { try insertLinkedPair(in: child) }
        let inMiddle = try middle.performAndWait {
            let pair = (doc: try #require(middle.registeredObject(for: inChild.doc.objectID)),
                        reviewer: try #require(middle.registeredObject(for: inChild.reviewer.objectID)))
            try middle.save()
            return pair
        }
        let inRoot = try root.performAndWait {
            let pair = (doc: try #require(root.registeredObject(for: inChild.doc.objectID)),
                        reviewer: try #require(root.registeredObject(for: inChild.reviewer.objectID)))
            try root.save()
            return pair
        }
        root.performAndWait { expectLinked(inRoot, in: root) }
        middle.performAndWait { expectLinked(inMiddle, in: middle) }
        child.performAndWait { expectLinked(inChild, in: child) }
    }

    // Docs/coredata-behaviour.md §4: a root that inserts and links the objects itself keeps the link
    // across the save that gives them permanent IDs (FreeCoreData testTransientValuesSurviveASave); so does a
    // link from a saved object to a new one, on both sides.
    @Test("Transient links to objects inserted in the root survive the save that gives them permanent IDs")
    func transientLinksSurviveTheRootsOwnInsert() throws {
        let stack = try makeStack()
        let ids = try seed(stack)
        let ctx = stack.context()
        try ctx.performAndWait {
            let pair = try insertLinkedPair(in: ctx)
            expectLinked(pair, in: ctx)
            let saved = try ctx.existingObject(with: ids.reviewer)
            let fresh = try ctx.insertNewObject(forEntityName: "Doc")
            try fresh.setValue(saved, forKey: "reviewer")
            try ctx.save()
            #expect(!fresh.objectID.isTemporaryID)
            #expect(docs(saved) == [fresh])
            #expect(reviewer(fresh) === saved)
        }
    }
}

