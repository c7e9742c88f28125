import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// The oracle on hand-made histories (workbench.md "The oracle"): it replays what each merge policy promises
/// (semantics §1) against the writes and the final store.
@Suite("Oracle (workbench.md: The oracle; semantics §1)")
struct OracleTests {
    static func write(_ actor: String, policy: String, key: Int64 = 1, field: String, intended: String?, committed: String, version: Int64, time: UInt64) -> WriteEvent {
        WriteEvent(actor: actor, role: actor, policy: policy, key: key, field: field, intended: intended, committed: committed, version: version, time: time)
    }

    /// Two saves of record 1, each event listing the fields the save committed.
    /// The editor sets title "mine" (version 2); the writer then changes value and commits version 3.
    static func history(writerCommitsTitle title: String, writerPolicy: String = "objectTrump") -> [WriteEvent] {
        [
            write("editor", policy: "objectTrump", field: "title", intended: "mine", committed: "mine", version: 2, time: 10),
            write("editor", policy: "objectTrump", field: "value", intended: nil, committed: "1.0", version: 2, time: 10),
            write("writer", policy: writerPolicy, field: "title", intended: nil, committed: title, version: 3, time: 20),
            write("writer", policy: writerPolicy, field: "value", intended: "2.0", committed: "2.0", version: 3, time: 20),
        ]
    }

    @Test("a clean history passes: each save kept the other's property (§1.3 ObjectTrump merges by property)")
    func cleanHistoryPasses() {
        let report = Oracle.check(
            events: Self.history(writerCommitsTitle: "mine"),
            finalRows: [1: (3, ["title": "mine", "value": "2.0"])], viewValues: [1: ["title": "mine", "value": "2.0"]],
            duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass)
        #expect(report.lostUpdates == 0 && report.promisedLosses == 0 && report.staleReads == 0 && report.storeMismatches == 0)
        #expect(report.findings.isEmpty)
        #expect(report.summary == "0 lost update(s), 0 loss(es) the policy or stack promises, 0 stale value(s), 0 duplicate(s), 0 store mismatch(es), 0 read-only save(s) reached the store")
    }

    @Test("a known lost update: a later save that did not write the title put the old one back")
    func lostUpdateFails() {
        let report = Oracle.check(
            events: Self.history(writerCommitsTitle: "old"),
            finalRows: [1: (3, ["title": "old", "value": "2.0"])], viewValues: [:],
            duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .fail)
        #expect(report.lostUpdates == 1)
        #expect(report.findings == [
            .init(kind: "lostUpdate", key: 1, field: "title", detail: "editor's mine replaced by old in writer's objectTrump save, which did not write it"),
        ])
        #expect(report.summary.hasPrefix("1 lost update(s)"))
    }

    @Test("the same loss under Overwrite is one the policy promises (§1.5), not a lost update")
    func overwriteLossIsPromised() {
        let report = Oracle.check(
            events: Self.history(writerCommitsTitle: "old", writerPolicy: "overwrite"),
            finalRows: [1: (3, ["title": "old", "value": "2.0"])], viewValues: [:],
            duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass)
        #expect(report.lostUpdates == 0)
        #expect(report.promisedLosses == 1)
        #expect(report.findings.map(\.kind) == ["promisedLoss"])
    }

    @Test("a StoreTrump save that kept the store's value promised it (§1.2); an ObjectTrump one did not (§1.3)")
    func ownWriteNotCommitted() {
        let storeTrump = [Self.write("importer", policy: "storeTrump", field: "title", intended: "mine", committed: "theirs", version: 4, time: 1)]
        let promised = Oracle.check(events: storeTrump, finalRows: [1: (4, ["title": "theirs"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(promised.verdict == .pass)
        #expect(promised.findings == [.init(kind: "promisedLoss", key: 1, field: "title", detail: "importer wrote mine; its storeTrump save kept theirs")])

        let objectTrump = [Self.write("importer", policy: "objectTrump", field: "title", intended: "mine", committed: "theirs", version: 4, time: 1)]
        let lost = Oracle.check(events: objectTrump, finalRows: [1: (4, ["title": "theirs"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(lost.verdict == .fail)
        #expect(lost.findings == [.init(kind: "lostUpdate", key: 1, field: "title", detail: "importer wrote mine; its objectTrump save committed theirs")])
    }

    // Docs/coredata-behaviour.md §1.5: after a conflict the snapshot is the newer row, and only the difference from
    // it stays a change. A save that met the row already holding its value (another save wrote the same date) no
    // longer changes that field; when a save slips in before its next attempt, ObjectTrump takes that newer value.
    @Test("a write the row already held, then replaced by another actor's later write, is no lost update (§1.5)")
    func writeHeldThenReplacedIsNotLost() {
        let zero = "2001-01-01 00:00:00 +0000", one = "2001-01-01 00:00:01 +0000"
        let held = [
            Self.write("editor", policy: "objectTrump", field: "updatedAt", intended: zero, committed: zero, version: 3, time: 30),
            Self.write("editor", policy: "objectTrump", field: "updatedAt", intended: one, committed: one, version: 16, time: 160),
            Self.write("importer", policy: "objectTrump", field: "updatedAt", intended: zero, committed: one, version: 17, time: 170),
        ]
        let report = Oracle.check(events: held, finalRows: [1: (17, ["updatedAt": one])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass, "\(report.findings)")
        #expect(report.lostUpdates == 0 && report.promisedLosses == 0 && report.findings.isEmpty)

        // Without a version at which the row held the importer's value before the other write, its save dropped
        // its own change: still a lost update.
        let neverHeld = Array(held.dropFirst())
        let lost = Oracle.check(events: neverHeld, finalRows: [1: (17, ["updatedAt": one])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(lost.lostUpdates == 1)
        #expect(lost.findings == [.init(kind: "lostUpdate", key: 1, field: "updatedAt", detail: "importer wrote \(zero); its objectTrump save committed \(one)")])

        // Nor when the save that replaced it is the importer's own (an earlier save of the same actor).
        var own = held
        own[1].actor = "importer"
        #expect(Oracle.check(events: own, finalRows: [1: (17, ["updatedAt": one])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: []).lostUpdates == 1)
    }

    @Test("a write a Rollback save discarded is a promised loss (§1.6)")
    func discardedByRollback() {
        let events = [Self.write("temporary", policy: "rollback", field: "value", intended: "9.0", committed: "<discarded>", version: -1, time: 1)]
        let report = Oracle.check(events: events, finalRows: [1: (2, ["value": "1.0"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass)
        #expect(report.promisedLosses == 1)
        #expect(report.findings == [.init(kind: "promisedLoss", key: 1, field: "value", detail: "temporary wrote 9.0; its rollback save discarded it")])
    }

    @Test("the store behind the last save, a stale view, duplicates, batch-touched rows and read-only saves")
    func otherFindings() {
        let events = [Self.write("importer", policy: "objectTrump", field: "title", intended: "new", committed: "new", version: 5, time: 1)]
        let mismatch = Oracle.check(events: events, finalRows: [1: (5, ["title": "other"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(mismatch.verdict == .fail)
        #expect(mismatch.storeMismatches == 1)
        #expect(mismatch.findings.first?.detail == "store has other, the last save committed new at version 5")

        let stale = Oracle.check(events: events, finalRows: [1: (5, ["title": "new"])], viewValues: [1: ["title": "old"]], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(stale.staleReads == 1)
        #expect(stale.findings.map(\.kind) == ["staleValue"])

        let duplicate = Oracle.check(events: [], finalRows: [:], viewValues: [:], duplicates: [7], readOnlySaves: 0, batchTouched: [])
        #expect(duplicate.verdict == .fail)
        #expect(duplicate.findings == [.init(kind: "duplicate", key: 7, field: "", detail: "more than one row has this id")])

        // A batch request wrote the row behind the contexts' backs: nothing can be concluded about it.
        let batch = Oracle.check(events: Self.history(writerCommitsTitle: "old"), finalRows: [1: (3, ["title": "old", "value": "2.0"])], viewValues: [:],
                                 duplicates: [], readOnlySaves: 0, batchTouched: [1])
        #expect(batch.verdict == .unknown)
        #expect(batch.lostUpdates == 0)
        // An UNKNOWN verdict says why, and how many.
        #expect(batch.summary.hasSuffix("; 1 record(s) could not be checked: 1 changed by batch requests, outside the object graph"))
        #expect(batch.findings.map(\.kind) == ["unknown"])

        // Core Data lets a conflict-free save of a Rollback context through: reported, not a failure.
        let readOnly = Oracle.check(events: [], finalRows: [:], viewValues: [:], duplicates: [], readOnlySaves: 2, batchTouched: [])
        #expect(readOnly.verdict == .pass)
        #expect(readOnly.readOnlySavesReachedStore == 2)
        #expect(readOnly.findings.map(\.kind) == ["readOnlySave"])
    }

    @Test("a real run of the tiny scenario passes the oracle")
    func realRunPasses() throws {
        let scenario = try #require(try tinyScenario().variants.first)
        let result = try runVariant(scenario)
        #expect(result.oracle.verdict == .pass, "\(result.oracle.findings)")
        #expect(!result.events.isEmpty)
    }
}

/// Writes are decided by which save changed which field (and so produced which row version),
/// not by comparing value texts; a change pushed through a stack of parents is its maker's, classified by the
/// policy of the save that took it to the store (semantics §1.1, §1.7).
@Suite("Oracle: writes by version, attributed through parents")
struct OracleByVersionTests {
    // A field set to the value its context already held is no change: the save writes nothing of it, and the
    // row version the event carries is another save's. The editor's context held "mine"; the writer had since
    // stored "theirs" (version 3), which the editor's root context read before recording.
    @Test("A write of the value already stored is not a lost update")
    func valueAlreadyThereIsNoWrite() {
        var noOp = OracleTests.write("editor", policy: "objectTrump", field: "title", intended: "mine", committed: "theirs", version: 3, time: 30)
        noOp.changed = false
        let events = [
            OracleTests.write("importer", policy: "objectTrump", field: "title", intended: "mine", committed: "mine", version: 2, time: 10),
            OracleTests.write("writer", policy: "objectTrump", field: "title", intended: "theirs", committed: "theirs", version: 3, time: 20),
            noOp,
        ]
        let report = Oracle.check(events: events, finalRows: [1: (3, ["title": "theirs"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass, "\(report.findings)")
        #expect(report.lostUpdates == 0 && report.promisedLosses == 0)
        #expect(report.findings.isEmpty)
        #expect(!noOp.isWrite)

        // The same event as a write (its save changed the field) is a loss: the decision is the save's, not the values'.
        noOp.changed = nil
        let lost = Oracle.check(events: Array(events.dropLast()) + [noOp], finalRows: [1: (3, ["title": "theirs"])], viewValues: [:],
                                duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(lost.lostUpdates + lost.promisedLosses == 1)
    }

    // Two saves that happened to store equal values are not one save: an observation never names another save's
    // write as the one that replaced it in "the same save" because the values match.
    @Test("A write is replaced in the same save only by another write of that save, not by an equal value")
    func sameSaveByWriteNotByValue() {
        var observed = OracleTests.write("writer", policy: "objectTrump", field: "done", intended: "true", committed: "true", version: 4, time: 40)
        observed.changed = false
        let events = [
            OracleTests.write("importer", policy: "storeTrump", field: "done", intended: "false", committed: "true", version: 4, time: 30),
            observed,
        ]
        let report = Oracle.check(events: events, finalRows: [1: (4, ["done": "true"])], viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        // The importer's StoreTrump save kept the store's value: a loss its policy promises, not a "later write".
        #expect(report.findings == [.init(kind: "promisedLoss", key: 1, field: "done", detail: "importer wrote false; its storeTrump save kept true")])
    }

    /// A small simulated run whose only field is a boolean, so that most writes store the value already there.
    static let coinFlips = """
        name: coin-flips
        seed: 3
        model:
          entities:
            - { name: Task, attributes: [{ name: id, type: integer64, optional: false, defaultValue: 0 }, { name: done, type: boolean, optional: false, defaultValue: false }], uniquenessConstraints: [[id]] }
          entity: Task
          idKey: id
          fields: [done]
        stack:
          topology: nested
        phases:
          - name: seed
            actors:
              - importer: { objects: 200, chunkSize: 100 }
          - name: run
            duration: 1s
            actors:
              - viewer: { visibleObjects: 20 }
              - editor: { rate: 20/s, edits: 5 }
              - writer: { rate: 20/s, edits: 5, distribution: hotspot }
              - importer: { objects: 2000, chunkSize: 100, updateFraction: 0.7, distribution: hotspot, rate: 20/s }
          - name: verify
        matrix:
          stack.topology: [nested, container]
        """

    // Before item 12 the nested variant reported dozens of findings here (each "replaced in the same save" by a
    // write of another save that stored the same boolean), the container one none.
    @Test("A simulated run where most writes store the value already there finds no loss")
    func coinFlipRunFindsNoLoss() throws {
        let loaded = try ScenarioLoader.load(text: Self.coinFlips, file: "coin-flips.yaml")
        #expect(loaded.variants.count == 2)
        for scenario in loaded.variants {
            let result = try runVariant(scenario)
            #expect(result.oracle.lostUpdates == 0 && result.oracle.promisedLosses == 0, "\(scenario.variantName): \(result.oracle.findings.prefix(3))")
            #expect(result.oracle.verdict == .pass)
            #expect(result.counters["oracleUnattributedChanges"] == nil)
            // Saves that changed nothing of an object record nothing of it: fewer writes than edits were made.
            #expect(result.events.contains { $0.isWrite })
        }
    }
}

/// On a nested stack (child → view context → private writer → store) each change that reaches
/// the store is attributed to the context that made it, and classified by the policy of the private writer's
/// save, the one that meets the store and settles its conflicts (semantics §1.7: a push meets no conflict).
@Suite("Oracle: attribution on a nested stack")
struct NestedAttributionTests {
    /// Sets `values` on record 1 in `context` (a child of the view context, or the external writer), registering
    /// the push as the actors do; returns the object and what was set.
    static func edit(_ w: Workload, _ context: ManagedObjectContext, actor: String, role: String, _ values: [String: Any], push: Bool) throws {
        try context.performAndWait {
            var request = FetchRequest(entityName: "Record")
            request.returnsObjectsAsFaults = false
            let object = try #require(try context.fetch(request).first)
            var intended: [String: String] = [:]
            for (field, value) in values.sorted(by: { $0.key < $1.key }) {
                try object.setValue(value, forKey: field)
                intended[field] = object.primitiveValue(forKey: field).description
            }
            let changed = w.changedFields([object])
            if push { w.announcePush(context, [(object, intended)], changed: changed, actor: actor, role: role) }
            try context.save()
            if !push { w.recorder.record(w.events([(object, intended)], actor: actor, role: role, changed: changed)) }
        }
    }

    /// A stack of `topology` whose roles all have `policy`, its workload, and one record stored (id 1, title "seed").
    static func seeded(topology: String, policy: String) throws -> (TopologyTests.Built, ManagedObjectModel, Workload) {
        let built = try TopologyTests.Built(["stack.topology=\(topology)", "stack.policies.all=\(policy)"])
        let model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
        let w = Workload(scenario: built.scenario, stack: built.stack, recorder: built.recorder, main: built.main, model: model)
        let seed = built.stack.makeImporter()
        try seed.performAndWait {
            let record = try seed.insertNewObject(forEntityName: "Record")
            try record.setValue(Int64(1), forKey: "id")
            try record.setValue("seed", forKey: "title")
            try seed.save()
        }
        try built.stack.afterBackgroundSave(seed)
        return (built, model, w)
    }

    static func finalRows(_ url: URL, model: ManagedObjectModel, fields: [String]) throws -> [Int64: (version: Int64, fields: [String: String])] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "verify")
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = coordinator
        return try reader.performAndWait {
            var request = FetchRequest(entityName: "Record")
            request.returnsObjectsAsFaults = false
            var rows: [Int64: (version: Int64, fields: [String: String])] = [:]
            for object in try reader.fetch(request) {
                guard let key = object.objectID.primaryKey else { continue }
                rows[key] = (object.snapshotVersion, Dictionary(uniqueKeysWithValues: fields.map { ($0, object.primitiveValue(forKey: $0).description) }))
            }
            return rows
        }
    }

    // The case of the policy-comparison run: the importer stores a title; the editor pushes its title into the
    // view context without saving it; a second importer's save of the view context and the private writer takes
    // the editor's title to the store with its own change of `value`; then another process (the writer actor)
    // saves `value`. Before item 12 the editor's title was recorded by nobody at that save, and the second
    // importer's save (or the writer's) was blamed: "importer's title replaced by editor's value in ...'s save,
    // which did not write it".
    @Test("A change pushed through the view context is the editor's, classified by the private writer's policy", arguments: ["objectTrump", "storeTrump"])
    func editorPushCarriedByAnotherSave(policy: String) throws {
        let (built, model, w) = try Self.seeded(topology: "nested", policy: policy)
        let stack = built.stack
        let importer = stack.makeImporter()
        try Self.edit(w, importer, actor: "importer", role: "importer", ["title": "imported"], push: true)
        try stack.afterBackgroundSave(importer)
        let editor = try stack.makeEditor()
        try Self.edit(w, editor, actor: "editor", role: "view", ["title": "edited"], push: true)
        // The editor's change waits in the view context; another importer's save takes it down.
        let second = stack.makeImporter()
        try Self.edit(w, second, actor: "importer2", role: "importer", ["value": 5.0], push: true)
        try stack.afterBackgroundSave(second)
        let writer = stack.makeWriter()
        try Self.edit(w, writer, actor: "writer", role: "writer", ["value": 7.0], push: false)
        built.main.drain()

        let events = built.recorder.allEvents
        let editorTitle = try #require(events.first { $0.actor == "editor" && $0.field == "title" })
        let carried = try #require(events.first { $0.actor == "importer2" && $0.field == "value" })
        // The editor's write is recorded at the version the carrying save produced, under that save's policy.
        #expect(editorTitle.isWrite)
        #expect(editorTitle.intended?.contains("edited") == true)
        #expect(editorTitle.version == carried.version)
        #expect(editorTitle.policy == policy)
        #expect(editorTitle.committed == editorTitle.intended)
        // The fields of that save no push changed are observations by the private writer's save, not by an actor.
        #expect(!events.contains { $0.actor == "importer2" && $0.field == "title" })
        #expect(built.recorder.state.withLock { $0.counters["oracleUnattributedChanges"] } == nil)

        let rows = try Self.finalRows(built.directory.file("store.sqlite"), model: model, fields: ["title", "value"])
        let report = Oracle.check(events: events, finalRows: rows, viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass, "\(report.findings)")
        #expect(report.lostUpdates == 0 && report.promisedLosses == 0 && report.storeMismatches == 0, "\(report.findings)")
    }

    // Docs/coredata-behaviour.md §1.4, §10.2: a save that meets a row deleted elsewhere, under a policy that accepts
    // the delete (ObjectTrump by default, StoreTrump, Rollback), deletes the object instead of writing it; after
    // the save the object has left its context and `isDeleted` is false again. Its actor's changes are then in no
    // row, and the record is the deleter's: no write may be recorded for it (one would carry the values and the
    // version the object was read with, which the oracle reads as the save losing its own write).
    // Container: the delete is another context's on the same coordinator (a layer-1 conflict), the importer's save
    // is recorded by `events`; nested: the delete is another coordinator's (layer 2), met by the private writer's
    // save that `observedRootSave` records.
    @Test("A save whose policy accepts a delete made elsewhere records no write for the deleted record",
          arguments: ["container", "nested"], ["objectTrump", "storeTrump", "rollback"])
    func acceptedDeleteRecordsNoWrite(topology: String, policy: String) throws {
        let (built, model, w) = try Self.seeded(topology: topology, policy: policy)
        let stack = built.stack
        // The importer reads the record before it is deleted elsewhere.
        let importer = stack.makeImporter()
        let object = try importer.performAndWait {
            var request = FetchRequest(entityName: "Record")
            request.returnsObjectsAsFaults = false
            return try #require(try importer.fetch(request).first)
        }
        let key = try #require(object.objectID.primaryKey)
        let deleter = topology == "nested" ? stack.makeWriter() : stack.makeImporter()
        try deleter.performAndWait {
            try deleter.delete(#require(try deleter.fetch(FetchRequest(entityName: "Record")).first))
            try deleter.save()
        }
        built.recorder.record(w.deleteEvents([key], actor: "deleter", role: "importer"))
        try importer.performAndWait {
            try object.setValue("imported", forKey: "title")
            let pending = [(object, ["title": object.primitiveValue(forKey: "title").description])]
            let changed = w.changedFields([object])
            if w.attributesPushes { w.announcePush(importer, pending, changed: changed, actor: "importer", role: "importer") }
            try importer.save()
            if !w.attributesPushes { w.recorder.record(w.events(pending, actor: "importer", role: "importer", changed: changed)) }
        }
        try stack.afterBackgroundSave(importer)
        built.main.drain()

        let rows = try Self.finalRows(built.directory.file("store.sqlite"), model: model, fields: ["title", "value"])
        #expect(rows.isEmpty)
        let events = built.recorder.allEvents
        #expect(events.map(\.actor) == ["deleter"])
        let report = Oracle.check(events: events, finalRows: rows, viewValues: [:], duplicates: [], readOnlySaves: 0, batchTouched: [])
        #expect(report.verdict == .pass, "\(report.findings)")
    }
}
