import Foundation
import Testing
import TraceReplay
@testable import Workbench

/// A simulated run is deterministic, so the same scenario and seed write the same operation trace,
/// byte for byte, in every run (house rule: nothing that feeds work or output depends on set order or addresses).
@Suite struct OperationTraceDeterminismTests {
    static func bytes(_ scenario: Scenario) throws -> Data {
        let (header, records) = try OperationTraceTests.traced(scenario)
        return TraceReplay.TraceCoding.file(header: header, records: records)
    }

    /// The topology whose merge order showed it: a child of a private root refreshes merged objects from its
    /// parent at scheduling points (MergeOrderTests has the rule); the run counted 523 or 524 faults fulfilled
    /// from the cache depending on the order of a set.
    @Test func privateRootWritesTheSameTraceEachRun() throws {
        let variant = try #require(try tinyScenario(overrides: ["stack.topology=privateRoot"]).variants.first)
        let first = try Self.bytes(variant)
        for i in 0..<4 {
            let again = try Self.bytes(variant)
            if again != first, let dir = ProcessInfo.processInfo.environment["TRACE_DUMP"] {
                try first.write(to: URL(fileURLWithPath: "\(dir)/first.jsonl"))
                try again.write(to: URL(fileURLWithPath: "\(dir)/again\(i).jsonl"))
            }
            #expect(again == first)
        }
    }

    /// A failed save's error names objects by URI: the store's identifier (a fresh UUID each run) is written as
    /// `store1`, `store2`... in the order the trace meets them.
    @Test func errorsNameStoresByNumber() throws {
        let file = OperationTraceTests.root.appendingPathComponent("Scenarios/conflict-storm.yaml").path
        let loaded = try ScenarioLoader.load(file: file, overrides: (OperationTraceTests.scaled["conflict-storm"] ?? []) + ["stack.policies.all=error"])
        let variant = try #require(loaded.variants.first)
        let (header, records) = try OperationTraceTests.traced(variant)
        let errors = records.compactMap(\.error).filter { $0.contains("x-coredata://") }
        #expect(!errors.isEmpty, "the error policy's conflicts fail saves")
        #expect(errors.allSatisfy { $0.contains("x-coredata://store1/Record/p") })
        #expect(TraceReplay.TraceCoding.file(header: header, records: records) == (try Self.bytes(variant)))
    }

    /// What one thread let go with no call between is written in the order of context and object, whatever
    /// order it was freed in (a set frees its elements in address order).
    @Test func releasesAreWrittenInAStableOrder() {
        func free(_ n: Int, _ key: Int64, ctx: Int = 3, thread: String = "a") -> OperationRecord {
            var r = OperationRecord(n: n, op: "free")
            (r.ctx, r.obj, r.thread) = (ctx, ObjectRef(entity: "Record", key: key), thread)
            return r
        }
        var call = OperationRecord(n: 1, op: "save")
        call.releasedAfter = [TraceRelease(ctx: 2, obj: ObjectRef(entity: "Record", key: 9)), TraceRelease(ctx: 1, obj: nil),
                              TraceRelease(ctx: 2, obj: ObjectRef(entity: "Record", key: 4))]
        let records = [call, free(2, 8), free(3, 2), free(4, 5, ctx: 1), free(5, 1, thread: "b"), OperationRecord(n: 6, op: "resume"), free(7, 3), free(8, 1)]
        let settled = OperationTraceRecorder.settled(records)
        #expect(settled.map(\.n) == Array(1...8))
        #expect(settled[0].releasedAfter?.map { "\($0.ctx) \($0.obj?.description ?? "context")" } == ["1 context", "2 Record#4", "2 Record#9"])
        #expect(settled[1...4].map { "\($0.thread!) \($0.ctx!) \($0.obj!)" } == ["a 1 Record#5", "a 3 Record#2", "a 3 Record#8", "b 3 Record#1"])
        #expect(settled[6...7].map { $0.obj!.description } == ["Record#1", "Record#3"], "a resume ends a run")
        #expect(OperationTraceRecorder.settled(settled) == settled)
    }
}

/// The trace's model header carries entity inheritance (`parent`, `abstract`), so
/// a run on a model with a hierarchy replays exactly (Core Data's replay builds `superentity`/`subentities`).
@Suite struct OperationTraceInheritanceTests {
    @Test func aModelWithInheritanceTracesAndReplaysExactly() throws {
        let variant = try #require(try ScenarioLoader.load(text: InheritanceScenarioTests.yaml, file: "shelf.yaml").variants.first)
        let (header, _) = try OperationTraceTests.traced(variant)
        let entities = try #require(header.models.first?.entities)
        #expect(entities.first { $0.name == "Item" }?.abstract == true)
        #expect(entities.filter { $0.parent == "Item" }.map(\.name).sorted() == ["Book", "Film"])
        // Read back from the file's bytes: the fields survive the JSON.
        let (read, _) = try TraceReplay.TraceCoding.read(TraceReplay.TraceCoding.line(header), name: "header")
        #expect(read == header)
        try OperationTraceTests.check(variant)
    }
}
