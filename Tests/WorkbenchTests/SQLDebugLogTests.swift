import Foundation
import ObjectGraph
import Testing
import TraceReplay

/// Core Data's SQL debug log read into counts (statements by kind, faults fulfilled from the
/// database, rows fetched), on a sample assembled only from lines published by others (the fixture names them;
/// Docs/calibration.md "The SQL debug log": second-hand).
@Suite struct SQLDebugLogTests {
    @Test func publishedSampleIsCounted() throws {
        let counts = SQLDebugLog.count(try Fixtures.text("coredata-sqldebug-sample.log"))
        #expect(counts.statements == ["select": 6, "insert": 2, "update": 3, "begin": 4, "commit": 4, "other": 4])
        #expect(counts.statementCount == 23)
        #expect(counts.faultsFromDatabase == 1)
        #expect(counts.rowsFetched == 1067 && counts.fetches == 2)
        #expect(abs(counts.fetchSeconds - 0.0287) < 1e-9)
        #expect(counts.unknownLines == 0)
        // Under our counters' names: BEGIN, COMMIT and pragmas are `other`, as our store counts them.
        #expect(counts.asCounters == ["sqlStatement": 23, "sqlStatement[select]": 6, "sqlStatement[insert]": 2, "sqlStatement[update]": 3,
                                      "sqlStatement[other]": 12, "faultFulfilledFromStore": 1, "rowFetched": 1067])
    }

    /// A pipe is read in pieces: a line cut at a piece's end is counted once it is complete, and each step's
    /// drain has what that step logged.
    @Test func piecesAndStepsAddUp() throws {
        let text = try Fixtures.text("coredata-sqldebug-sample.log")
        let whole = SQLDebugLog.count(text)
        for size in [1, 7, 64, 1000] {
            var log = SQLDebugLog()
            var total = SQLLogCounts()
            var rest = Substring(text)
            while !rest.isEmpty {
                log.feed(String(rest.prefix(size)))
                rest = rest.dropFirst(size)
                total += log.drain()
            }
            log.finish()
            total += log.drain()
            #expect(total == whole, "pieces of \(size)")
        }
    }

    @Test func linesAreClassified() {
        #expect(SQLDebugLog.event("2024-01-02 10:00:00.1 App[12:34] CoreData: sql: DELETE FROM ZITEM WHERE Z_PK IN (?, ?)") == .statement("delete"))
        #expect(SQLDebugLog.event("CoreData: sql: UPDATE OR FAIL Z_PRIMARYKEY SET Z_MAX = ?") == .statement("update"))
        #expect(SQLDebugLog.event("CoreData: annotation: total fetch execution time: 0.0015s for 20 rows.") == .fetchExecution(seconds: 0.0015, rows: 20))
        #expect(SQLDebugLog.event("CoreData: annotation: sql connection fetch time: 0.0012s") == .connectionFetchTime(0.0012))
        #expect(SQLDebugLog.event("CoreData: annotation: Disconnecting from sqlite database.") == .ignored)
        #expect(SQLDebugLog.event("CoreData: something new: text") == .unknown)
        #expect(SQLDebugLog.event("VALUES(?,?,?)") == nil, "a wrapped statement's tail is not a statement")
        #expect(SQLDebugLog.event("Some other subsystem: sql: SELECT 1") == nil)
    }
}

/// A profile fitted to measured steps by non-negative least squares recovers known costs, and
/// names what the steps cannot determine instead of writing a figure for it (Docs/calibration.md "The fitted profile").
@Suite struct ProfileFitTests {
    /// Steps from a known profile (with a little deterministic noise): the fit recovers each cost within 2%.
    @Test func knownCostsAreRecovered() throws {
        let truth: [String: Double] = ["objectRegistered": 4000, "rowFetched": 8000, "fetchExecuted": 150_000, "sqlStatement": 20000, "propertyRead": 300]
        let ops = ["objectRegistered", "rowFetched", "fetchExecuted", "sqlStatement", "propertyRead", "rowMigrated", "transaction", "objectPushed"]
        var samples: [ProfileFit.Sample] = []
        var state: UInt64 = 42
        func next(_ n: UInt64) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % n)
        }
        for i in 0..<200 {
            var counts: [String: Int] = [:]
            counts["fetchExecuted"] = 1
            counts["sqlStatement"] = 1 + next(3)
            counts["rowFetched"] = next(50)
            counts["objectRegistered"] = next(60)
            counts["propertyRead"] = next(400)
            // Two steps did a transaction: too few to determine it.
            if i < 2 { counts["transaction"] = 1 }
            // objectPushed always comes as twice the registrations: only their combination is determined.
            let time = counts.reduce(0.0) { $0 + Double($1.value) * (truth[$1.key] ?? 0) } * (1 + Double(next(100) - 50) / 10_000)
            samples.append(ProfileFit.Sample(counts: counts, nanoseconds: time))
        }
        let result = ProfileFit.fit(samples, operations: ops.filter { $0 != "objectPushed" })
        for (op, ns) in truth {
            guard case .fitted(let got, let steps)? = result.figures[op] else { Issue.record("\(op) not fitted: \(String(describing: result.figures[op]))"); continue }
            #expect(abs(got - ns) / ns < 0.02, "\(op): \(got) vs \(ns)")
            #expect(steps > 100)
        }
        #expect(result.figures["rowMigrated"] == .undetermined("no step did it"))
        #expect(result.figures["transaction"] == .undetermined("only 2 steps did it (at least 3 needed)"))
        #expect(result.steps == 200 && result.relativeResidual < 0.01)

        // Collinear: objectPushed = 2 × objectRegistered in every step.
        let tied = samples.map { s -> ProfileFit.Sample in
            var c = s.counts
            c["objectPushed"] = 2 * (c["objectRegistered"] ?? 0)
            return ProfileFit.Sample(counts: c, nanoseconds: s.nanoseconds)
        }
        let both = ProfileFit.fit(tied, operations: ops)
        guard case .undetermined(let why)? = both.figures["objectPushed"] else { Issue.record("objectPushed was determined"); return }
        #expect(why.contains("objectRegistered"))
        if case .fitted? = both.figures["objectRegistered"] { Issue.record("objectRegistered was determined though tied to objectPushed") }
        guard case .fitted(let fetch, _)? = both.figures["fetchExecuted"] else { Issue.record("fetchExecuted not fitted"); return }
        #expect(abs(fetch - 150_000) / 150_000 < 0.02, "the others are still determined")

        // The file: measured figures labelled with the device, OS and steps; undetermined ones named, no figure.
        let yaml = ProfileFit.yaml(both, operations: ops, device: "MacBookPro18,3", os: "macOS 15.1", traces: "tiny")
        #expect(yaml.contains("  fetchExecuted: { ns: "))
        #expect(yaml.contains("measured on MacBookPro18,3, macOS 15.1: fitted to 200 steps"))
        #expect(yaml.contains("#   objectPushed: its counts are a combination of objectRegistered"))
        #expect(!yaml.contains("  objectPushed: {") && !yaml.contains("  rowMigrated: {"))
        // With a fallback, the undetermined ones get its figure, marked as an estimate not measured here.
        let filled = ProfileFit.yaml(both, operations: ops, device: "d", os: "o", traces: "t", fallback: ("modern-iphone", ["rowMigrated": 2000, "objectPushed": 70000]))
        #expect(filled.contains("  rowMigrated: { ns: 2000, estimated: true, source: \"NOT determined on d (no step did it): the figure of modern-iphone, not measured here\" }"))
        let read: [String: Double] = Dictionary(uniqueKeysWithValues: ProfileFit.figures(inProfile: filled).map { ($0.name, $0.ns) })
        let readFetch = try #require(read["fetchExecuted"])
        #expect(abs(readFetch - 150_000) / 150_000 < 0.02)
    }

    /// The estimates' figures read by the fallback reader match the profile loader's.
    @Test func fallbackReaderReadsTheShippedProfile() throws {
        let text = try String(contentsOf: OperationTraceTests.root.appendingPathComponent("Profiles/estimates.yaml"), encoding: .utf8)
        let list = ProfileFit.figures(inProfile: text)
        let figures: [String: Double] = Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0.ns) })
        #expect(list.map(\.name) == CostedOperation.names)
        #expect(figures["objectRegistered"] == 4000 && figures["transaction"] == 2_000_000 && figures["rowMigrated"] == 2000)
        #expect(figures["inMemoryRowWritten"] == 2000 && figures["inMemoryRowRead"] == 500)
    }
}

/// The shared part of the Apple side (Docs/calibration.md "The Apple side"): the log split by the
/// tool's step markers, the diff restricted to what Core Data can report, and the fit's samples.
@Suite struct CalibrationReportTests {
    @Test func theLogIsSplitByStepMarkers() throws {
        let sample = try Fixtures.text("coredata-sqldebug-sample.log")
        let text = "CoreData: sql: BEGIN EXCLUSIVE\n" + SQLDebugStepLog.marker(7) + sample + SQLDebugStepLog.marker(8) + SQLDebugStepLog.marker(9)
        var log = SQLDebugStepLog()
        var steps: [(n: Int, counts: SQLLogCounts)] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            steps += log.feed(String(rest.prefix(13)))
            rest = rest.dropFirst(13)
        }
        #expect(steps.map(\.n) == [7, 8, 9])
        #expect(steps[0].counts.statements == ["begin": 1])
        #expect(steps[1].counts == SQLDebugLog.count(sample))
        #expect(steps[2].counts == SQLLogCounts())
    }

    /// A replay that measured exactly the run's counts diffs to zero on every counter Core Data can report, and
    /// nothing else is compared; the samples pair each step's time with our counts of the same record.
    @Test func diffAndSamplesFromMeasuredSteps() throws {
        let variant = try #require(try tinyScenario().variants.first)
        let (_, records) = try OperationTraceTests.traced(variant)
        let steps = records.filter { $0.op != "end" }.map { r -> StepMeasurement in
            let c = r.counts ?? [:]
            var sql = SQLLogCounts()
            for kind in ["select", "insert", "update", "delete", "other"] where c["sqlStatement[\(kind)]", default: 0] > 0 { sql.statements[kind] = c["sqlStatement[\(kind)]"] }
            sql.faultsFromDatabase = c["faultFulfilledFromStore", default: 0]
            sql.rowsFetched = c["rowFetched", default: 0] + c["idRowFetched", default: 0]  // the log counts every row a fetch returns
            return StepMeasurement(n: r.n, op: r.op, thread: r.thread, nanoseconds: UInt64(1000 * (c["objectRegistered", default: 0] + 1)), mainThreadNanoseconds: 0,
                                   sql: sql, notifications: c["notificationPosted", default: 0], saves: c["contextSave", default: 0], registeredObjects: 0)
        }
        let document = CalibrationReport.diff(records: records, steps: steps, ours: "run", theirs: "measured")
        #expect(!document.overall.isEmpty && document.overall.allSatisfy { $0.difference == 0 }, "\(document.overall.filter { $0.difference != 0 })")
        #expect(document.overall.allSatisfy { CalibrationReport.measuredCounters.contains($0.counter) })
        #expect(document.overall.contains { $0.counter == "sqlStatement[insert]" && $0.ours > 0 })
        #expect(!document.steps.isEmpty && document.steps.allSatisfy { $0.difference == 0 && CalibrationReport.measuredCounters.contains($0.counter) })
        // One fewer statement measured in one step shows as that step's difference.
        var short = steps
        let i = try #require(short.firstIndex { $0.sql.statements["insert", default: 0] > 0 })
        short[i].sql.statements["insert"]! -= 1
        let changed = CalibrationReport.diff(records: records, steps: short, ours: "run", theirs: "measured").steps.filter { $0.difference != 0 }
        #expect(changed.map(\.counter) == ["sqlStatement", "sqlStatement[insert]"] && changed.allSatisfy { $0.n == short[i].n && $0.difference == -1 })

        let samples = CalibrationReport.samples(records: records, steps: steps)
        #expect(samples.count == records.filter { $0.op != "end" && !($0.counts ?? [:]).isEmpty }.count)
        let csv = CalibrationReport.stepsCSV(steps)
        #expect(csv.hasPrefix("n,op,thread,ns,mainThreadNs,statements,select,insert,update,delete,begin,commit,other,faultsFromDatabase,rowsFetched,notifications,saves,registeredObjects\n"))
        #expect(csv.split(separator: "\n").count == steps.count + 1)
    }
}

/// The copyable macOS workflow writes the traces of every shipped scenario with the parameters
/// OperationTraceTests replays exactly here (so what Core Data replays is what this suite checked).
@Suite struct CalibrationWorkflowTests {
    @Test func workflowTracesEveryShippedScenarioWithTheTestedParameters() throws {
        let text = try String(contentsOf: OperationTraceTests.root.appendingPathComponent("Calibration/workflows/calibrate-macos.yml"), encoding: .utf8)
        var found: [String: [String]] = [:]
        for line in text.split(separator: "\n") where line.contains("ambar-bench run Scenarios/") {
            let name = try #require(line.components(separatedBy: "Scenarios/").last?.components(separatedBy: ".yaml").first)
            found[name] = line.components(separatedBy: "-p '").dropFirst().compactMap { $0.components(separatedBy: "'").first }
            #expect(line.contains("--operation-trace traces/\(name)"))
        }
        #expect(found == OperationTraceTests.scaled)
        #expect(text.contains("runs-on: macos-latest") && text.contains("--product ambar-calibrate") && text.contains("upload-artifact"))
    }
}
