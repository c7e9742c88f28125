import Ambar
import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// Each topology builds the stack workbench.md and architecture.md ("Workbench") describe: coordinators,
/// contexts and their parents, merge policies per role, and the merge path that brings a background save into
/// the view context (semantics §3).
@Suite("Topologies (workbench.md: stack; semantics §3)")
struct TopologyTests {
    /// One built stack on a temporary store.
    final class Built: @unchecked Sendable {
        let directory: TemporaryDirectory
        let main = SimulatedMainThread(label: "test-main")
        let recorder = RunRecorder()
        let stack: WorkbenchStack
        let scenario: Scenario

        /// - Parameter text: a scenario's YAML (the tiny scenario when nil).
        init(_ overrides: [String], text: String? = nil) throws {
            directory = try TemporaryDirectory("workbench-topology")
            let loaded = try text.map { try ScenarioLoader.load(text: $0, file: "scenario.yaml", overrides: overrides) } ?? tinyScenario(overrides: overrides)
            scenario = try #require(loaded.variants.first)
            let model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
            stack = try TopologyBuilder(scenario: scenario, model: model, storeURL: directory.file("store.sqlite"), main: main, recorder: recorder).build()
        }

        var coordinatorNames: [String] { stack.coordinators.map(\.0) }
        func coordinator(_ name: String) -> PersistentStoreCoordinator? { stack.coordinators.first { $0.0 == name }?.1 }
    }

    /// What a context is, read on its queue.
    struct Shape {
        var policy: String
        var coordinator: PersistentStoreCoordinator?
        var parent: ManagedObjectContext?
        var concurrency: ManagedObjectContext.ConcurrencyType
        var automaticMerges: Bool
    }

    static func shape(_ c: ManagedObjectContext) -> Shape {
        c.performAndWait {
            Shape(policy: c.mergePolicy.type.name, coordinator: c.persistentStoreCoordinator, parent: c.parent,
                  concurrency: c.concurrencyType, automaticMerges: c.automaticallyMergesChangesFromParent)
        }
    }

    /// Imports a record, shows it in the view context, updates it in a second importer context and checks that
    /// the view context shows the new title once the topology's merge has run.
    static func expectBackgroundSaveReachesView(_ built: Built, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let stack = built.stack
        let first = stack.makeImporter()
        try first.performAndWait {
            let record = try first.insertNewObject(forEntityName: "Record")
            try record.setValue(Int64(1), forKey: "id")
            try record.setValue("before", forKey: "title")
            try first.save()
        }
        try stack.afterBackgroundSave(first)
        built.main.drain()
        let view = stack.viewContext
        // The view holds the object (registered objects are weak: keep it).
        let shown: [ManagedObject] = try view.performAndWait {
            try view.fetch(FetchRequest(entityName: "Record"))
        }
        #expect(shown.count == 1, sourceLocation: sourceLocation)
        #expect(view.performAndWait { shown.first?.value(forKey: "title") as? String } == "before", sourceLocation: sourceLocation)
        let second = stack.makeImporter()
        try second.performAndWait {
            var request = FetchRequest(entityName: "Record")
            request.returnsObjectsAsFaults = false
            let record = try #require(try second.fetch(request).first)
            try record.setValue("after", forKey: "title")
            try second.save()
        }
        try stack.afterBackgroundSave(second)
        // The merge runs on the main queue, for history after a remote-change notification: wait for it.
        var title: String?
        for _ in 0..<200 {
            built.main.drain()
            title = view.performAndWait { shown.first.flatMap { try? $0.checkedValue(forKey: "title") as? String } }
            if title == "after" { break }
            usleep(10_000)
        }
        #expect(title == "after", "the view context should show the background save after its merge", sourceLocation: sourceLocation)
    }

    @Test("ambar: two coordinators, 9.2 writer-only merge filter, StoreTrump view, ObjectTrump importer on the writer")
    func ambar() throws {
        let built = try Built([])
        let stack = built.stack
        let container = try #require(stack.ambar)
        #expect(container.options.mergeFilter == .writerOnly)
        #expect(container.mainCoordinator !== container.writerCoordinator)
        #expect(built.coordinatorNames == ["main", "writer", "external"])
        #expect(stack.viewContext === container.viewContext)
        let view = Self.shape(stack.viewContext)
        #expect(view.policy == "storeTrump")
        #expect(view.concurrency == .mainQueue)
        #expect(stack.viewContext.queue === built.main.queue)
        let importer = Self.shape(stack.makeImporter())
        #expect(importer.coordinator === container.writerCoordinator)
        #expect(importer.policy == "objectTrump")
        let editor = Self.shape(try stack.makeEditor())
        #expect(editor.parent === stack.viewContext)
        let temporary = Self.shape(stack.makeTemporary())
        #expect(temporary.policy == "rollback")
        #expect(temporary.coordinator === container.mainCoordinator)
        // The writer actor is another process: a coordinator of its own.
        let writer = Self.shape(stack.makeWriter())
        #expect(writer.coordinator === built.coordinator("external"))
        #expect(writer.coordinator !== container.mainCoordinator && writer.coordinator !== container.writerCoordinator)
        #expect(stack.policies == ["view": "storeTrump", "importer": "objectTrump", "editor": "objectTrump", "temporary": "rollback", "writer": "objectTrump", "batch": "objectTrump"])
        #expect(!stack.backgroundSaveIsMerge && stack.committedContext == nil)
        try Self.expectBackgroundSaveReachesView(built)
        #expect(built.recorder.mergeLatency.count >= 1)
        // Read-only: Ambar's switch, which gives the view context Rollback.
        stack.setViewReadOnly(true)
        #expect(container.isViewContextReadOnly)
        #expect(Self.shape(stack.viewContext).policy == "rollback")
        stack.setViewReadOnly(false)
        #expect(Self.shape(stack.viewContext).policy == "storeTrump")
    }

    @Test("ambar8: the 8.0–9.1 filter merges saves of both coordinators")
    func ambar8() throws {
        let built = try Built(["stack.topology=ambar8"])
        let container = try #require(built.stack.ambar)
        #expect(container.options.mergeFilter == .bothCoordinators)
        #expect(container.mainCoordinator !== container.writerCoordinator)
        #expect(built.coordinatorNames == ["main", "writer", "external"])
        try Self.expectBackgroundSaveReachesView(built)
    }

    // The Ambar topologies free each merge's ID sets where Core Data does (the merging queue)
    // unless `stack.mergeRelease: background` asks for ours.
    @Test("stack.mergeRelease picks where the Ambar container frees merged ID sets (default: the merging queue)")
    func ambarMergeRelease() throws {
        let plain = try Built([])
        #expect(try #require(plain.stack.ambar).options.mergeRelease == .mergingQueue)
        let ours = try Built(["stack.mergeRelease=background"])
        #expect(try #require(ours.stack.ambar).options.mergeRelease == .background)
        #expect(throws: ScenarioError.self) { try Built(["stack.mergeRelease=later"]) }
    }

    @Test("ambar7: the legacy stack set up asynchronously, with separate or single coordinators")
    func ambar7() throws {
        let separate = try Built(["stack.topology=ambar7"])
        let container = try #require(separate.stack.ambar)
        #expect(container.mainCoordinator !== container.writerCoordinator)
        #expect(container.options.mergeFilter == .writerOnly)
        #expect(separate.recorder.state.withLock { $0.counters["setupNanos"] } != nil)
        try Self.expectBackgroundSaveReachesView(separate)

        let single = try Built(["stack.topology=ambar7", "stack.singleCoordinator=true"])
        let one = try #require(single.stack.ambar)
        #expect(one.mainCoordinator === one.writerCoordinator)
        #expect(single.coordinatorNames == ["main", "external"])
        #expect(Self.shape(single.stack.makeImporter()).coordinator === one.mainCoordinator)
    }

    @Test("container: one coordinator, background contexts, view context merging automatically (semantics §3.3)")
    func container() throws {
        let built = try Built(["stack.topology=container"])
        let stack = built.stack
        #expect(stack.ambar == nil)
        #expect(built.coordinatorNames == ["container", "external"])
        let coordinator = try #require(built.coordinator("container"))
        let view = Self.shape(stack.viewContext)
        #expect(view.automaticMerges)
        #expect(view.coordinator === coordinator)
        #expect(view.concurrency == .mainQueue)
        #expect(view.policy == "objectTrump")
        let importer = Self.shape(stack.makeImporter())
        #expect(importer.coordinator === coordinator && importer.parent == nil && importer.concurrency == .privateQueue)
        #expect(Self.shape(try stack.makeEditor()).parent === stack.viewContext)
        #expect(Self.shape(stack.makeTemporary()).coordinator === coordinator)
        try Self.expectBackgroundSaveReachesView(built)
        #expect(built.recorder.mergeLatency.count >= 1)
        stack.setViewReadOnly(true)
        #expect(Self.shape(stack.viewContext).policy == "rollback")
    }

    @Test("nested: private writer → main → background children (semantics §2.2)")
    func nested() throws {
        let built = try Built(["stack.topology=nested"])
        let stack = built.stack
        #expect(built.coordinatorNames == ["nested", "external"])
        let view = Self.shape(stack.viewContext)
        let privateWriter = try #require(view.parent)
        #expect(privateWriter.name == "privateWriter")
        #expect(Self.shape(privateWriter).coordinator === built.coordinator("nested"))
        #expect(Self.shape(privateWriter).concurrency == .privateQueue)
        #expect(view.concurrency == .mainQueue)
        #expect(stack.committedContext === privateWriter)
        #expect(stack.backgroundSaveIsMerge)
        for make in [stack.makeImporter, stack.makeTemporary] { #expect(Self.shape(make()).parent === stack.viewContext) }
        #expect(Self.shape(try stack.makeEditor()).parent === stack.viewContext)
        // Batch requests cannot run in a child: a context on the coordinator.
        #expect(Self.shape(stack.makeBatch()).parent == nil)
        try Self.expectBackgroundSaveReachesView(built)
        // The push reached the store through both parents.
        let check = try TopologyTests.storeTitles(built)
        #expect(check == ["after"])
        stack.setViewReadOnly(true)
        #expect(Self.shape(privateWriter).policy == "rollback")
    }

    @Test("nested with the error policy: the private writer's failed save is counted as a save failure (§1.1, 133020)")
    func nestedWriterFailureCounted() throws {
        let built = try Built(["stack.topology=nested", "stack.mergePolicy=error"])
        let stack = built.stack
        func edit(_ context: ManagedObjectContext, title: String, insert: Bool = false) throws {
            try context.performAndWait {
                let record: ManagedObject
                if insert {
                    record = try context.insertNewObject(forEntityName: "Record")
                    try record.setValue(Int64(1), forKey: "id")
                } else {
                    var request = FetchRequest(entityName: "Record")
                    request.returnsObjectsAsFaults = false
                    record = try #require(try context.fetch(request).first)
                }
                try record.setValue(title, forKey: "title")
                try context.save()
            }
        }
        // The private writer keeps its objects (as it does while they have unsaved changes or the app holds
        // them), so its snapshot of the row stays at the version it saved.
        let privateWriter = try #require(stack.committedContext)
        privateWriter.performAndWait { privateWriter.retainsRegisteredObjects = true }
        let first = stack.makeImporter()
        try edit(first, title: "one", insert: true)
        try stack.afterBackgroundSave(first)
        // Another process changes the row behind the nested stack's back.
        try edit(stack.makeWriter(), title: "external")
        let second = stack.makeImporter()
        try edit(second, title: "two")
        #expect(throws: ObjectGraphError.self) { try stack.afterBackgroundSave(second) }
        let failures = built.recorder.state.withLock { $0.saveFailures }
        #expect(failures == ["privateWriter:133020": 1])
        #expect(try Self.storeTitles(built) == ["external"])
    }

    @Test("history: background saves with persistent history, the view merging other authors' transactions (semantics §3.6)")
    func history() throws {
        let built = try Built(["stack.topology=history"])
        let stack = built.stack
        #expect(built.coordinatorNames == ["main", "writer", "external"])
        let main = try #require(built.coordinator("main")), writer = try #require(built.coordinator("writer"))
        #expect(Self.shape(stack.viewContext).coordinator === main)
        #expect(stack.viewContext.performAndWait { stack.viewContext.stalenessInterval } == 0)
        #expect(stack.keepAlive.contains { $0 is HistoryConsumer })
        #expect(Self.shape(stack.makeImporter()).coordinator === writer)
        try Self.expectBackgroundSaveReachesView(built)
        let transactions = try main.fetchHistory(.fetchHistory(after: nil))
        #expect(transactions.count == 2)
        #expect(transactions.allSatisfy { $0.author == "importer" })
        #expect(built.recorder.mergeLatency.count >= 1)
    }

    @Test("per-role merge policies: stack.mergePolicy for the view, stack.policies for the others")
    func policyOverrides() throws {
        let built = try Built(["stack.topology=container", "stack.mergePolicy=rollback", "stack.policies.importer=overwrite", "stack.policies.writer=error"])
        let stack = built.stack
        #expect(Self.shape(stack.viewContext).policy == "rollback")
        #expect(Self.shape(stack.makeImporter()).policy == "overwrite")
        #expect(Self.shape(stack.makeWriter()).policy == "error")
        #expect(Self.shape(try stack.makeEditor()).policy == "objectTrump")
        #expect(stack.policies["view"] == "rollback" && stack.policies["importer"] == "overwrite" && stack.policies["writer"] == "error")

        let all = try Built(["stack.policies.all=storeTrump", "stack.policies.temporary=rollback"])
        #expect(all.stack.policies == ["view": "storeTrump", "importer": "storeTrump", "editor": "storeTrump", "temporary": "rollback", "writer": "storeTrump", "batch": "storeTrump"])
        #expect(Self.shape(all.stack.makeImporter()).policy == "storeTrump")
        #expect(Self.shape(all.stack.makeTemporary()).policy == "rollback")
    }

    // Apple's container with background contexts as children of the view context (semantics §2.2).
    @Test("viewChildren: the view context on the one coordinator, importers, editors and temporaries its children")
    func viewChildren() throws {
        let built = try Built(["stack.topology=viewChildren"])
        let stack = built.stack
        #expect(built.coordinatorNames == ["viewChildren", "external"])
        let coordinator = try #require(built.coordinator("viewChildren"))
        let view = Self.shape(stack.viewContext)
        #expect(view.coordinator === coordinator && view.parent == nil)
        #expect(view.concurrency == .mainQueue && stack.viewContext.queue === built.main.queue)
        #expect(view.automaticMerges)
        for make in [stack.makeImporter, stack.makeTemporary] { #expect(Self.shape(make()).parent === stack.viewContext) }
        #expect(Self.shape(try stack.makeEditor()).parent === stack.viewContext)
        #expect(Self.shape(stack.makeBatch()).parent == nil)
        // The child's save is the merge into the view context; the oracle reads committed rows off the main queue.
        #expect(stack.backgroundSaveIsMerge && stack.editorsSaveThroughView)
        let reader = try #require(stack.committedContext)
        #expect(reader !== stack.viewContext && Self.shape(reader).concurrency == .privateQueue && Self.shape(reader).coordinator === coordinator)
        try Self.expectBackgroundSaveReachesView(built)
        // The push reached the store through the view context's own save.
        #expect(try Self.storeTitles(built) == ["after"])
        stack.setViewReadOnly(true)
        #expect(Self.shape(stack.viewContext).policy == "rollback")
    }

    // CoreStore's and DATAStack's stack; semantics §3.3: a child with
    // automaticallyMergesChangesFromParent merges its parent's saves.
    @Test("privateRoot: a private root saving context, the view context and background contexts its children; the view merges the root's saves")
    func privateRoot() throws {
        let built = try Built(["stack.topology=privateRoot"])
        let stack = built.stack
        #expect(built.coordinatorNames == ["privateRoot", "external"])
        let view = Self.shape(stack.viewContext)
        let root = try #require(view.parent)
        #expect(root.name == "rootSaving")
        #expect(Self.shape(root).coordinator === built.coordinator("privateRoot") && Self.shape(root).concurrency == .privateQueue)
        #expect(view.concurrency == .mainQueue && view.automaticMerges)
        // Background contexts are the view context's siblings.
        for make in [stack.makeImporter, stack.makeTemporary] { #expect(Self.shape(make()).parent === root) }
        #expect(Self.shape(try stack.makeEditor()).parent === root)
        #expect(Self.shape(stack.makeBatch()).parent == nil)
        #expect(stack.committedContext === root && !stack.backgroundSaveIsMerge && !stack.editorsSaveThroughView)
        try Self.expectBackgroundSaveReachesView(built)
        #expect(try Self.storeTitles(built) == ["after"])
        // The view learnt of both root saves by merges on the main queue, not by pushes.
        #expect(built.recorder.mergeLatency.count >= 2)
        stack.setViewReadOnly(true)
        #expect(Self.shape(root).policy == "rollback")
    }

    // A command-line import, with no view context.
    @Test("headless: background contexts on the coordinator, no main-queue context, no editor")
    func headless() throws {
        let built = try Built([], text: Self.importsOnly("headless", viewer: false))
        let stack = built.stack
        #expect(built.coordinatorNames == ["headless", "external"])
        let coordinator = try #require(built.coordinator("headless"))
        // The stand-in for the view context is a private-queue context nothing merges into.
        let standIn = Self.shape(stack.viewContext)
        #expect(standIn.concurrency == .privateQueue && !standIn.automaticMerges && standIn.coordinator === coordinator)
        #expect(stack.viewContext.queue !== built.main.queue)
        let importer = Self.shape(stack.makeImporter())
        #expect(importer.coordinator === coordinator && importer.parent == nil)
        #expect(throws: WorkbenchError.self) { try stack.makeEditor() }
        let context = stack.makeImporter()
        try context.performAndWait {
            let record = try context.insertNewObject(forEntityName: "Record")
            try record.setValue(Int64(1), forKey: "id")
            try record.setValue("stored", forKey: "title")
            try context.save()
        }
        try stack.afterBackgroundSave(context)
        #expect(try Self.storeTitles(built) == ["stored"])
        #expect(built.recorder.mergeLatency.count == 0)
    }

    /// 200 records seeded, then 200 more imported (half of each run chunk updating seeded ones), with or without a
    /// viewer: imports alone, so every main-queue block is theirs or the viewer's.
    static func importsOnly(_ topology: String, viewer: Bool) -> String {
        """
        name: imports
        seed: 7
        stack:
          topology: \(topology)
        phases:
          - name: seed
            actors:
              - importer: { objects: 200, chunkSize: 100 }
          - name: run
            actors:
        \(viewer ? "      - viewer: { visibleObjects: 10 }\n" : "")      - importer: { objects: 200, chunkSize: 50, updateFraction: 0.5 }
          - name: verify
        """
    }

    static func run(_ text: String, overrides: [String] = []) throws -> VariantResult {
        try runVariant(try #require(try ScenarioLoader.load(text: text, file: "scenario.yaml", overrides: overrides).variants.first))
    }

    static func busy(_ r: VariantResult, _ kind: MainBlockKind) -> Double { r.value("mainBusy", "total", label: kind.rawValue) ?? -1 }

    /// The oracle passed and had the importers' updates to check (not a vacuous pass).
    static func expectOraclePassed(_ r: VariantResult, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary) \(r.oracle.findings.prefix(3)) \(r.notes.prefix(3))", sourceLocation: sourceLocation)
        #expect(r.oracle.lostUpdates == 0 && r.oracle.storeMismatches == 0 && r.oracle.staleReads == 0, sourceLocation: sourceLocation)
        #expect(r.events.contains { $0.role == "importer" && $0.intended != nil && $0.version >= 0 }, "no importer update reached the oracle", sourceLocation: sourceLocation)
        #expect(r.notes.isEmpty, "\(r.notes.prefix(3))", sourceLocation: sourceLocation)
        #expect(r.value("rowsInserted", "value") == 300, sourceLocation: sourceLocation)
    }

    // Semantics §2.2: each chunk's save is a push into the view context on the main queue, and the
    // view context's save of it to the store runs there too.
    @Test("A viewChildren run pushes every import chunk into the view context and saves it on the main queue (mainBusy[push], mainBusy[save]); the oracle passes")
    func viewChildrenRun() throws {
        let r = try Self.run(Self.importsOnly("viewChildren", viewer: true))
        #expect(r.topology == "viewChildren")
        #expect(Self.busy(r, .push) > 0)
        #expect(Self.busy(r, .save) > 0)
        #expect(Self.busy(r, .merge) == 0, "every save is a child's push: nothing is merged")
        #expect(r.counters["objectsMerged", default: 0] == 0)
        // The chunks' pushes are the merges of this stack (mainBusy's percentiles count them).
        #expect((r.value("mainBusy", "count") ?? 0) >= 6, "one push per chunk: 2 seed + 4 run chunks")
        let total = try #require(r.value("mainBusy", "total"))
        let sum = MainBlockKind.allCases.map { Self.busy(r, $0) }.reduce(0, +)
        #expect(abs(sum - total) < 1e-6 * max(1, total))
        Self.expectOraclePassed(r)
        // The tiny scenario's editor (a child of the view context, saving it) too.
        let tiny = try runVariant(try #require(try tinyScenario(overrides: ["stack.topology=viewChildren"]).variants.first))
        #expect(tiny.oracle.verdict == .pass, "\(tiny.oracle.summary) \(tiny.oracle.findings.prefix(3))")
        #expect(tiny.events.contains { $0.actor.contains("editor") && $0.version >= 0 }, "the editor's saves reached the oracle")
    }

    // Semantics §3.3: the background contexts push into the private root off the main queue; the
    // view context learns of each root save by a merge on the main queue.
    @Test("A privateRoot run merges each root save into the view context on the main queue (mainBusy[merge]); imports push nothing there; the oracle passes")
    func privateRootRun() throws {
        let r = try Self.run(Self.importsOnly("privateRoot", viewer: true))
        #expect(r.topology == "privateRoot")
        #expect(Self.busy(r, .merge) > 0)
        #expect(Self.busy(r, .push) == 0, "imports push into the private root, not the view context")
        #expect(Self.busy(r, .save) == 0, "the root saves on its own queue")
        #expect(r.counters["objectsMerged", default: 0] > 0)
        #expect((r.value("mergeLatency", "count") ?? 0) >= 4, "one merge per root save of the run phase (4 chunks; the seed phase's 2 are not measured)")
        Self.expectOraclePassed(r)
        // The tiny scenario's editor is a child of the root too: its saveViewContext saves the root.
        let tiny = try runVariant(try #require(try tinyScenario(overrides: ["stack.topology=privateRoot"]).variants.first))
        #expect(tiny.oracle.verdict == .pass, "\(tiny.oracle.summary) \(tiny.oracle.findings.prefix(3))")
        #expect(tiny.events.contains { $0.actor.contains("editor") && $0.version >= 0 }, "the editor's saves reached the oracle")
    }

    // Where background saves are pushes, a temporary's save reaches the store when its parents
    // save, and conflicts there are settled by the committing context's policy (semantics §1.7: a push meets none).
    @Test("In viewChildren, privateRoot and nested, temporaries that save and a read-only view context are held to what reached the store; the oracle passes", arguments: ["viewChildren", "privateRoot", "nested"])
    func pushedSavesHeldToTheCommittingContext(topology: String) throws {
        let text = """
            name: temporaries
            seed: 11
            stack:
              topology: \(topology)
            phases:
              - name: seed
                actors:
                  - importer: { objects: 300, chunkSize: 150 }
              - name: run
                duration: 1s
                actors:
                  - viewer: { visibleObjects: 20, readOnly: true }
                  - temporary: { rate: 20/s, edits: 3, save: true }
                  - importer: { objects: 1000, chunkSize: 100, updateFraction: 0.5 }
              - name: verify
            """
        let r = try Self.run(text)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary) \(r.oracle.findings.prefix(3))")
        #expect(r.oracle.lostUpdates == 0 && r.oracle.storeMismatches == 0)
        #expect(r.events.contains { $0.role == "temporary" && $0.intended != nil && $0.version >= 0 }, "the temporaries' saves reached the oracle")
        #expect(r.events.filter { $0.role == "temporary" || $0.role == "importer" }.allSatisfy { $0.policy == "rollback" },
                "the read-only view context's policy settled every pushed write")
        #expect((r.value("readOnlySavesReachedStore", "count") ?? 0) > 0)
    }

    // No view context: nothing runs on the main queue.
    @Test("A headless run does nothing on the main queue (mainBusy total 0), merges nothing, and the oracle passes")
    func headlessRun() throws {
        let r = try Self.run(Self.importsOnly("headless", viewer: false))
        #expect(r.topology == "headless")
        #expect(r.value("mainBusy", "total") == 0)
        #expect(r.value("mainBlocks", "count") == 0)
        #expect(r.value("mainStall", "max") == 0)
        #expect(r.counters["merges"] == 0 && r.counters["objectsMerged", default: 0] == 0)
        #expect((r.value("mergeLatency", "count") ?? 0) == 0)
        #expect(r.value("objectsRegistered", "count", label: "queue=main") == 0)
        Self.expectOraclePassed(r)
        // A batch update with mergeBy ids (the default) has no view context to merge into.
        let batch = try Self.run(Self.importsOnly("headless", viewer: false).replacingOccurrences(of: "  - name: verify", with: """
              - name: batch
                duration: 300ms
                actors:
                  - batch: { kind: update, rate: 10/s, size: 20 }
              - name: verify
            """))
        #expect(batch.value("mainBusy", "total") == 0)
        #expect((batch.value("rowsUpdated", "value") ?? 0) > 100)
        #expect(batch.oracle.verdict != .fail)
    }

    /// The titles in the store, read through a fresh coordinator.
    static func storeTitles(_ built: Built) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(file: ScenarioLoader.workloadModel), name: "check")
        try coordinator.addPersistentStore(type: .sqlite, at: built.directory.file("store.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait { try context.fetch(FetchRequest(entityName: "Record")).compactMap { $0.value(forKey: "title") as? String } }
    }
}
