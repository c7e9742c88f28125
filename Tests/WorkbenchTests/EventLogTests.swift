import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// A run's event history is bounded: kept on disk while the oracle checks it, and events.jsonl
/// keeps a stated part of it.
@Suite("Event history")
struct EventLogTests {
    static func event(key: Int64, _ n: Int) -> WriteEvent {
        WriteEvent(actor: "a\(n % 3)", role: "importer", policy: "objectTrump", key: key, field: n % 2 == 0 ? "title" : "value",
                   intended: n % 5 == 0 ? nil : "v\(n)", committed: "v\(n)", version: Int64(n), time: UInt64(n), step: n % 7 == 0 ? nil : n)
    }

    // The log on disk gives back every event, by key in ascending order, each key's history in recording order,
    // and field for field what was recorded (nil intended and step, changed flags).
    @Test("The on-disk event log returns each key's history in key order, as recorded")
    func onDiskRoundTrip() throws {
        let folder = try TemporaryDirectory("event-log")
        let log = EventLog(directory: folder.url)
        var recorded: [WriteEvent] = []
        var rng = SystemRandomNumberGenerator()
        for n in 0..<(EventLog.batch * 2 + 123) {
            var e = Self.event(key: Int64.random(in: 1...300, using: &rng), n)
            if n % 11 == 0 { e.changed = false }
            recorded.append(e)
        }
        for chunk in stride(from: 0, to: recorded.count, by: 100) { log.append(Array(recorded[chunk..<min(chunk + 100, recorded.count)])) }
        #expect(log.count == recorded.count)
        var seen: [Int64] = []
        var all: [WriteEvent] = []
        try log.forEachKey { key, events in
            seen.append(key)
            #expect(events.allSatisfy { $0.key == key })
            all += events
        }
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)
        let expected = Dictionary(grouping: recorded, by: \.key).sorted { $0.key < $1.key }.flatMap(\.value)
        #expect(all == expected)
        #expect(log.failure == nil)

        // What events.jsonl keeps: the finding keys' events first, then the others by key, `limit` in all.
        let kept = try log.kept(findingKeys: [seen[5], seen[2]], limit: 50)
        #expect(kept.count == 50)
        let firstTwo = expected.filter { $0.key == seen[2] } + expected.filter { $0.key == seen[5] }
        #expect(Array(kept.prefix(firstTwo.count)) == Array(firstTwo.prefix(50)))
    }

    // The log is the harness's bookkeeping: its SQL, run on an actor's thread inside a simulation, counts in none of
    // the run's figures (no statement, row examined or sort on the recording thread).
    @Test("The on-disk event log counts no operation on the thread that records or reads it")
    func countsNothingOnItsThread() throws {
        let folder = try TemporaryDirectory("event-log")
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let log = EventLog(directory: folder.url)
        log.append((0..<(EventLog.batch + 1)).map { Self.event(key: Int64($0 % 50), $0) })
        var keys = 0
        try log.forEachKey { _, _ in keys += 1 }
        let kept = try log.kept(findingKeys: [1, 2], limit: 10)
        #expect(keys == 50 && kept.count == 10)
        #expect(log.failure == nil)
        #expect((0..<CostedOperation.count).allSatisfy { counting.counts[$0] == 0 })
        #expect((0..<StatementKind.count).allSatisfy { counting.statementCounts[$0] == 0 })
    }

    // A run with more events than the cap: the oracle checks them all (its report does not change with the cap),
    // events.jsonl holds the cap, and results.json and the report say so.
    @Test("events.jsonl keeps at most the cap and the report states what it holds")
    func boundedHistory() throws {
        let scenario = try #require(try tinyScenario().variants.first)
        let work = try TemporaryDirectory("workbench-run")
        let full = try VariantRunner(scenario: scenario, workDirectory: work.url).run()
        var capped = VariantRunner(scenario: scenario, workDirectory: work.url)
        capped.eventsKept = 20
        let result = try capped.run()
        let history = try #require(result.eventHistory)
        #expect(history.recorded > 20)
        #expect(history.recorded == full.eventHistory?.recorded)
        #expect(history.kept == 20 && result.events.count == 20)
        #expect(result.oracle == full.oracle)
        #expect(full.eventHistory?.kept == full.eventHistory?.recorded)
        #expect(history.statement == "events.jsonl holds 20 of \(history.recorded) events: every event of the records with findings, then the others in record-key order, 20 at most (the oracle checked all \(history.recorded))")

        let files = try ReportWriter.files(results: [result], manifest: ReportGoldenTests.manifest, events: ["\(result.variant)#\(result.repetition)": result.events])
        let lines = String(decoding: try #require(files["events.jsonl"]), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 20)
        #expect(String(decoding: try #require(files["results.json"]), as: UTF8.self).contains("events.jsonl holds 20 of \(history.recorded) events"))
        #expect(String(decoding: try #require(files["report.html"]), as: UTF8.self).contains("events.jsonl holds 20 of \(history.recorded) events"))
    }
}
