import Foundation
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
        #expect(report.summary == "0 lost update(s), 0 loss(es) the policy promises, 0 stale value(s), 0 duplicate(s), 0 store mismatch(es), 0 read-only save(s) reached the store")
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
        // Issue 20 item 9: an UNKNOWN verdict says why, and how many.
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
