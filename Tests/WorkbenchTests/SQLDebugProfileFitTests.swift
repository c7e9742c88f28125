import Foundation
import ObjectGraph
import Testing
import TraceReplay
@testable import Workbench

/// The forms a line of Core Data's SQL debug log comes in (Docs/calibration.md "Fitting a profile to your device's
/// SQL debug log"): bare, with the Xcode console's prefix, with the unified log's (`log stream`), and coloured.
enum LogForm: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case plain, xcode, unified, coloured

    var testDescription: String { rawValue }
    var hasTimestamps: Bool { self != .plain }
}

/// A synthetic log written in one form, on a clock advanced by hand (microseconds, local time of 2024-03-01, zone
/// +0100), so that what the log says is known to the nanosecond.
struct SyntheticLog {
    let form: LogForm
    /// Microseconds since 2024-03-01 00:00 local time.
    var clock: Int64 = (10 * 3600 + 22 * 60 + 33) * 1_000_000
    var lines: [String] = []

    init(_ form: LogForm) { self.form = form }

    var text: String { lines.joined(separator: "\n") + "\n" }

    var timestamp: String {
        let day = clock / 86_400_000_000, inDay = clock % 86_400_000_000
        let s = inDay / 1_000_000, us = inDay % 1_000_000
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "2024-03-\(two(1 + day)) \(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60)).\(String(us + 1_000_000).dropFirst())+0100"
    }

    /// One Core Data line, `head` `sql` or `annotation`.
    mutating func line(_ head: String, _ message: String) {
        switch form {
        case .plain: lines.append("CoreData: \(head): \(message)")
        case .xcode: lines.append("\(timestamp) MyApp[123:4567] CoreData: \(head): \(message)")
        case .unified:
            lines.append("\(timestamp) 0x1a2b     Default     0x0                  123    0    MyApp: (CoreData) [com.apple.coredata:\(head)] \(message)")
        case .coloured:
            // Escapes around the head, around a figure, and around the whole line.
            var coloured = message
            if let r = coloured.range(of: #"[0-9.]+s\b"#, options: .regularExpression) {
                coloured.replaceSubrange(r, with: "\u{1B}[1;33m\(coloured[r])\u{1B}[0m")
            }
            lines.append("\u{1B}[2m\(timestamp) MyApp[123:4567]\u{1B}[0m \u{1B}[36mCoreData: \(head):\u{1B}[0m \(coloured)\u{1B}[0m")
        }
    }

    mutating func sql(_ statement: String) { line("sql", statement) }

    mutating func fetch(rows: Int, microseconds: Int64, connection: Int64) {
        sql("SELECT 0, t0.Z_PK, t0.Z_OPT, t0.ZTITLE FROM ZITEM t0 WHERE t0.ZCOUNT > ? LIMIT \(rows)")
        line("annotation", "sql connection fetch time: \(Self.seconds(connection))s")
        line("annotation", "total fetch execution time: \(Self.seconds(microseconds))s for \(rows) rows.")
        clock += microseconds + 100
    }

    mutating func count(_ n: Int, microseconds: Int64) {
        sql("SELECT COUNT( DISTINCT t0.Z_PK) FROM ZITEM t0 WHERE t0.ZCOUNT > ?")
        line("annotation", "total count request execution time: \(Self.seconds(microseconds))s for count of \(n).")
        clock += microseconds + 100
    }

    /// A save of `inserts`, `updates` and `deletes` statements taking `microseconds` from BEGIN to COMMIT, with Core
    /// Data's key bookkeeping (not a row of the app's) and an INSERT wrapped over two lines.
    mutating func save(inserts: Int, updates: Int, deletes: Int, microseconds: Int64) {
        let begin = clock
        sql("BEGIN EXCLUSIVE")
        if inserts > 0 {
            sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?")
            sql("UPDATE OR FAIL Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ? AND Z_MAX = ?")
        }
        clock += 1
        for i in 0..<inserts {
            if i == 0 {
                sql("INSERT INTO ZITEM(Z_PK, Z_ENT, Z_OPT, ZCOUNT, ZTITLE)")
                lines.append("VALUES(?, ?, ?, ?, ?)")
            } else {
                sql("INSERT INTO ZITEM(Z_PK, Z_ENT, Z_OPT, ZCOUNT, ZTITLE) VALUES(?, ?, ?, ?, ?)")
            }
        }
        for _ in 0..<updates { sql("UPDATE ZITEM SET ZCOUNT = ?, Z_OPT = ? WHERE Z_PK = ? AND Z_OPT = ?") }
        for _ in 0..<deletes { sql("DELETE FROM ZITEM WHERE Z_PK = ?") }
        clock = begin + microseconds
        sql("COMMIT")
        clock += 500
    }

    static func seconds(_ microseconds: Int64) -> String {
        "\(microseconds / 1_000_000).\(String(microseconds % 1_000_000 + 1_000_000).dropFirst())"
    }

    /// Fetches of 10, 100 and 1000 rows at 1 ms plus 5 µs a row (the SQL connection's share 0.1 ms less), two count
    /// requests of 1.2 ms, and seven saves at 2 ms plus 50 µs an insert, 40 µs an update and 30 µs a delete, one of
    /// them across midnight.
    static func known(_ form: LogForm) -> SyntheticLog {
        var log = SyntheticLog(form)
        for rows in [10, 100, 1000] {
            let total = 1000 + 5 * Int64(rows)
            log.fetch(rows: rows, microseconds: total, connection: total - 100)
        }
        log.count(42, microseconds: 1200)
        log.count(7, microseconds: 1200)
        for (i, u, d) in [(1, 0, 0), (5, 0, 0), (0, 3, 0), (2, 2, 0), (0, 0, 4), (3, 1, 2), (0, 1, 1)] {
            log.save(inserts: i, updates: u, deletes: d, microseconds: 2000 + 50 * Int64(i) + 40 * Int64(u) + 30 * Int64(d))
        }
        log.clock = 86_400_000_000 - 1000
        log.save(inserts: 4, updates: 0, deletes: 1, microseconds: 2000 + 200 + 30)
        return log
    }
}

/// Core Data's SQL debug log read in each form a user captures it in: the line's event and the log system's
/// timestamp (Docs/calibration.md "Fitting a profile to your device's SQL debug log").
@Suite struct SQLDebugLogFormTests {
    @Test("A line reads the same in every form: bare, Xcode's prefix, the unified log's, coloured", arguments: LogForm.allCases)
    func everyFormReadsAlike(_ form: LogForm) throws {
        var log = SyntheticLog(form)
        log.fetch(rows: 1066, microseconds: 27_900, connection: 25_500)
        log.count(42, microseconds: 1200)
        log.sql("COMMIT")
        let events = log.lines.map { SQLDebugLog.event($0[...]) }
        #expect(events == [.statement("select"), .connectionFetchTime(0.0255), .fetchExecution(seconds: 0.0279, rows: 1066),
                           .statement("select"), .countRequest(seconds: 0.0012, count: 42), .statement("commit")])
        #expect(SQLDebugLog.statementText(log.lines[0][...]) == "SELECT 0, t0.Z_PK, t0.Z_OPT, t0.ZTITLE FROM ZITEM t0 WHERE t0.ZCOUNT > ? LIMIT 1066")
        // 2024-03-01 10:22:33.000000+0100 is 09:22:33 UTC.
        let stamp = SQLDebugLog.timestamp(log.lines[0][...])
        #expect(stamp == (form.hasTimestamps ? 1_709_284_953_000_000_000 : nil))
        if form.hasTimestamps {
            #expect(try #require(SQLDebugLog.timestamp(log.lines[3][...])) - stamp! == 28_000_000, "27.9 ms and the builder's 0.1 ms gap")
        }
    }

    @Test("A coloured time is its value, and the coloured log counts as the plain one")
    func colouredTimesAreNotZero() {
        #expect(SQLDebugLog.event("\u{1B}[32mCoreData: annotation: total fetch execution time: \u{1B}[1m0.0279s\u{1B}[0m for 1066 rows.\u{1B}[0m")
                == .fetchExecution(seconds: 0.0279, rows: 1066))
        #expect(SQLDebugLog.event("CoreData: annotation: sql connection fetch time: \u{1B}[38;5;208m0.0255s\u{1B}[m") == .connectionFetchTime(0.0255))
        let plain = SyntheticLog.known(.xcode), coloured = SyntheticLog.known(.coloured)
        #expect(SQLDebugLog.count(coloured.text) == SQLDebugLog.count(plain.text))
        #expect(SQLDebugLog.count(coloured.text).fetchSeconds > 0.008)
    }

    @Test("A time or row count that cannot be read is an unreadable line, never 0", arguments: [
        "CoreData: annotation: total fetch execution time: ?s for 3 rows.",
        "CoreData: annotation: total fetch execution time: 1e999s for 3 rows.",
        "CoreData: annotation: total fetch execution time: 0.0010s for 99999999999999999999999 rows.",
        "CoreData: annotation: total fetch execution time: 0.0010s",
        "CoreData: annotation: sql connection fetch time: \u{1B}[31ms",
        "CoreData: annotation: total count request execution time: nan for count of 2.",
    ])
    func unreadableFiguresAreNotZero(_ line: String) {
        guard case .unreadable? = SQLDebugLog.event(line[...]) else {
            Issue.record("\(line.debugDescription) read as \(String(describing: SQLDebugLog.event(line[...])))")
            return
        }
        #expect(SQLDebugLog.count(line).fetchSeconds == 0 && SQLDebugLog.count(line).unknownLines == 1)
    }
}

/// `ambar-bench fit --sqldebug`: fetch and save costs fitted to a device's SQL debug log by non-negative least
/// squares, the rest from a base profile (Docs/calibration.md "Fitting a profile to your device's SQL debug log").
@Suite struct SQLDebugProfileFitTests {
    static func base() throws -> CostProfile { try CostProfile.load("modern-iphone", root: OperationTraceTests.root) }

    static func fitted(_ text: String) -> SQLDebugProfileFit { SQLDebugProfileFit.fit(SQLDebugTimings.read(text), log: "device.log") }

    static func ns(_ fit: SQLDebugProfileFit, _ op: String) -> Double? { fit.figure(op)?.nanoseconds }

    @Test("Fetches of 10, 100 and 1000 rows at 1 ms + 5 µs a row, and timed saves, fit back to their costs", arguments: LogForm.allCases)
    func knownCostsFitBack(_ form: LogForm) throws {
        let fit = Self.fitted(SyntheticLog.known(form).text)
        #expect(fit.timings.fetches.map(\.rows) == [10, 100, 1000] && fit.timings.countRequests.count == 2)
        #expect(fit.timings.transactions.count == 8 && fit.timings.setAside.isEmpty, "\(fit.timings.setAside)")
        // The wrapped INSERT counts once; the key table's UPDATE is bookkeeping, not a row.
        #expect(fit.timings.transactions.map(\.inserts) == [1, 5, 0, 2, 0, 3, 0, 4])
        #expect(fit.timings.transactions.map(\.updates) == [0, 0, 3, 2, 0, 1, 1, 0])
        for (op, truth) in [("fetchExecuted", 1_000_000.0), ("rowFetched", 5000)] {
            let got = try #require(Self.ns(fit, op), "\(op): \(String(describing: fit.figure(op)))")
            #expect(abs(got - truth) < 0.01, "\(op): \(got)")
        }
        #expect(fit.figure("fetchExecuted")?.dataPoints == 3)
        #expect(fit.countRequestNanoseconds == 1_200_000)
        let share = try #require(fit.connectionShare)
        #expect(abs(share - 8.25 / 8.55) < 1e-9)
        let saves = [("transaction", 2_000_000.0), ("rowInserted", 50_000), ("rowUpdated", 40_000), ("rowDeleted", 30_000)]
        for (op, truth) in saves {
            if form.hasTimestamps {
                let got = try #require(Self.ns(fit, op), "\(op): \(String(describing: fit.figure(op)))")
                #expect(abs(got - truth) < 0.01, "\(op): \(got)")
            } else {
                #expect(Self.ns(fit, op) == nil)
                #expect(fit.figure(op)?.why.contains("no timestamps") == true, "\(String(describing: fit.figure(op)))")
            }
        }
    }

    @Test("Fetches that all returned as many rows do not separate the fixed cost from the per-row cost")
    func sameRowCountIsUndetermined() {
        var log = SyntheticLog(.plain)
        for _ in 0..<4 { log.fetch(rows: 100, microseconds: 1500, connection: 1400) }
        let fit = Self.fitted(log.text)
        #expect(Self.ns(fit, "fetchExecuted") == nil && Self.ns(fit, "rowFetched") == nil)
        #expect(fit.figure("rowFetched")?.why == "every fetch returned 100 rows: only the time of such a fetch is known (1,500,000 ns on average), not its fixed and per-row parts")
        var two = SyntheticLog(.plain)
        two.fetch(rows: 1, microseconds: 1005, connection: 900)
        two.fetch(rows: 2, microseconds: 1010, connection: 900)
        #expect(Self.fitted(two.text).figure("fetchExecuted")?.why == "only 2 fetches in the log (at least 3 needed)")
        #expect(Self.fitted("CoreData: sql: COMMIT\n").figure("fetchExecuted")?.why == "no fetch in the log (no `total fetch execution time` line)")
    }

    @Test("Saves whose statements always come in the same proportions leave their row costs undetermined")
    func proportionalSavesAreUndetermined() {
        var log = SyntheticLog(.xcode)
        for n in 1...4 { log.save(inserts: n, updates: 0, deletes: 0, microseconds: 2000 + 50 * Int64(n)) }
        for n in 1...3 { log.save(inserts: 0, updates: n, deletes: n, microseconds: 2000 + 70 * Int64(n)) }
        let fit = Self.fitted(log.text)
        #expect(Self.ns(fit, "transaction").map { abs($0 - 2_000_000) < 0.01 } == true)
        #expect(Self.ns(fit, "rowInserted").map { abs($0 - 50_000) < 0.01 } == true)
        #expect(Self.ns(fit, "rowUpdated") == nil && Self.ns(fit, "rowDeleted") == nil)
        #expect(fit.figure("rowUpdated")?.why.contains("rowDeleted") == true, "\(String(describing: fit.figure("rowUpdated")))")
    }

    @Test("Negative, absurd and unreadable figures are set aside with their line, and the rest still fits")
    func absurdFiguresAreSetAside() throws {
        var log = SyntheticLog(.plain)
        log.lines.append("CoreData: annotation: total fetch execution time: -0.5000s for 10 rows.")
        log.lines.append("CoreData: annotation: total fetch execution time: 7200.0000s for 10 rows.")
        log.lines.append("CoreData: annotation: total fetch execution time: 0.0010s for 2000000000 rows.")
        log.lines.append("CoreData: annotation: total fetch execution time: 0.0010s for 99999999999999999999999 rows.")
        log.lines.append("CoreData: annotation: total count request execution time: -1.0s for count of 3.")
        for rows in [10, 100, 1000] { log.fetch(rows: rows, microseconds: 1000 + 5 * Int64(rows), connection: 900) }
        let fit = Self.fitted(log.text)
        #expect(fit.timings.setAside.map(\.line) == [1, 2, 3, 4, 5])
        #expect(fit.timings.setAside[0].message.contains("negative"))
        #expect(fit.timings.setAside[2].message.contains("2000000000 rows"))
        #expect(fit.timings.setAside[3].message.contains("cannot be read"))
        #expect(abs(try #require(Self.ns(fit, "fetchExecuted")) - 1_000_000) < 0.01)
        #expect(fit.countRequestNanoseconds == nil)
    }

    @Test("An empty, binary or unreadable file, or one that is not a log, is an error naming the file")
    func hostileFilesAreErrors() throws {
        let dir = try TemporaryDirectory("sqldebug-fit")
        let cases: [(String, Data, String)] = [
            ("empty.log", Data(), "is empty"),
            ("blank.log", Data(" \n\n".utf8), "is empty"),
            ("binary.log", Data([0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x00, 0xFF, 0xFE, 0x00]), "not a text log"),
            ("notes.log", Data("hello\nCoreData is nice\nSQL is not here either\n".utf8), "no line of Core Data's SQL debug log"),
        ]
        for (name, data, message) in cases {
            let url = dir.file(name)
            try data.write(to: url)
            #expect(throws: WorkbenchError.self) { try SQLDebugProfileFit.read(file: url) }
            do { _ = try SQLDebugProfileFit.read(file: url) } catch {
                #expect("\(error)".contains(url.path) && "\(error)".contains(message), "\(name): \(error)")
            }
        }
        do { _ = try SQLDebugProfileFit.read(file: dir.file("missing.log")); Issue.record("a missing file was read") } catch {
            #expect("\(error)".contains("missing.log"))
        }
    }

    @Test("The written profile loads, names its command, device and log, and takes what the log did not determine from the base")
    func writtenProfileLoads() throws {
        let base = try Self.base()
        let fit = Self.fitted(SyntheticLog.known(.xcode).text)
        let command = "ambar-bench fit --sqldebug device.log --device \"Ana's iPhone 15 \\\"Pro\\\"\""
        let text = fit.yaml(base: base, device: "Ana's iPhone 15 \"Pro\"", command: command)
        let profile = try CostProfile.parse(text, file: "fitted.yaml", name: "fitted")
        #expect(profile.device == "Ana's iPhone 15 \"Pro\"" && profile.writtenBy == command)
        #expect(text.hasPrefix("# Cost profile written by `\(command)`"))
        #expect(profile.description.contains("3 fetches, 2 count requests and 8 transactions"))
        let fitted = ["fetchExecuted", "rowFetched", "transaction", "rowInserted", "rowUpdated", "rowDeleted"]
        #expect(profile.estimated == CostedOperation.names.filter { !fitted.contains($0) })
        #expect(profile.cost(.fetchExecuted) == 1_000_000 && profile.cost(.rowFetched) == 5000 && profile.cost(.transaction) == 2_000_000)
        #expect(profile.cost(.objectRegistered) == base.cost(.objectRegistered) && profile.cost(.sqlStatement) == base.cost(.sqlStatement))
        let fetchSource = try #require(profile.sources["fetchExecuted"])
        #expect(fetchSource.hasPrefix("fitted to 3 fetches in device.log"))
        #expect(fetchSource.contains("sqlStatement") && fetchSource.contains("96%") && fetchSource.contains("2 count requests"))
        #expect(try #require(profile.sources["transaction"]).contains("INFERRED"))
        #expect(profile.sources["objectRegistered"] == "not determined by the log: modern-iphone's figure: \(base.sources["objectRegistered"]!)")

        // A report shows where the profile came from.
        let summary = ProfileSummary(profile)
        #expect(summary.device == profile.device && summary.writtenBy == command)
        var results = ReportGoldenTests.results
        for i in results.indices { results[i].mode = ExecutionMode.simulated.rawValue }
        var manifest = ReportGoldenTests.manifest
        manifest.profile = summary
        let html = HTMLReport.modeSection(results, manifest: manifest)
        #expect(html.contains("Ana&#39;s iPhone 15 &quot;Pro&quot;") && html.contains("ambar-bench fit --sqldebug device.log"))
        #expect(!HTMLReport.modeSection(results, manifest: ReportGoldenTests.manifest).contains("Written by"))
    }

    @Test("Non-negative least squares lands exactly on nearly collinear columns")
    func nearlyCollinearFetchesFitExactly() throws {
        var log = SyntheticLog(.plain)
        for rows in [1000, 1010, 1020, 1030] { log.fetch(rows: rows, microseconds: 1000 + 5 * Int64(rows), connection: 900) }
        let fit = Self.fitted(log.text)
        #expect(abs(try #require(Self.ns(fit, "fetchExecuted")) - 1_000_000) < 0.01)
        #expect(abs(try #require(Self.ns(fit, "rowFetched")) - 5000) < 0.01)
    }
}

/// `ambar-bench fit` end to end: what it prints, writes and refuses.
@Suite struct FitCommandTests {
    @Test("fit --sqldebug writes a loadable profile and a summary, refuses to overwrite, and writes nothing for a bad log")
    func fitEndToEnd() throws {
        let ws = try TemporaryDirectory("fit-cli")
        try ws.write("device.log", SyntheticLog.known(.unified).text)
        let run = try bench(["fit", "--sqldebug", "device.log", "--device", "Test Phone 15"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let written = ws.file("Profiles/test-phone-15.yaml")
        let profile = try CostProfile.load(file: written)
        #expect(profile.device == "Test Phone 15" && profile.writtenBy == "ambar-bench fit --sqldebug device.log --device 'Test Phone 15'")
        #expect(profile.cost(.rowInserted) == 50_000)
        #expect(run.stdout.contains("fetchExecuted") && run.stdout.contains("1000000") && run.stdout.contains("8 transactions"))
        #expect(run.stdout.contains("profile: Profiles/test-phone-15.yaml"))

        let again = try bench(["fit", "--sqldebug", "device.log", "--device", "Test Phone 15"], in: ws.url)
        #expect(again.status == 2 && again.stderr.contains("--force"), "\(again.stderr)")
        let forced = try bench(["fit", "--sqldebug", "device.log", "--device", "Test Phone 15", "--force", "--out", "Profiles/test-phone-15.yaml"], in: ws.url)
        #expect(forced.status == 0, "\(forced.stderr)")

        try ws.write("notes.txt", "nothing of Core Data here\n")
        let bad = try bench(["fit", "--sqldebug", "notes.txt", "--device", "Other", "--out", "other.yaml"], in: ws.url)
        #expect(bad.status == 2 && bad.stderr.contains("notes.txt"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.file("other.yaml").path))
        #expect(ws.tree().filter { $0.hasSuffix(".yaml") } == ["Profiles/test-phone-15.yaml"])

        // Without --sqldebug it fits the published evidence, which a folder without Profiles/evidence/ lacks.
        let evidence = try bench(["fit"], in: ws.url)
        #expect(evidence.status == 2 && evidence.stderr.contains("Profiles/evidence/fit.yaml"), "\(evidence.stderr)")
    }

    @Test("fit refuses the options of the other mode rather than ignore them, before reading anything")
    func fitRefusesOtherModesOptions() throws {
        let ws = try TemporaryDirectory("fit-cli-modes")
        try ws.write("device.log", SyntheticLog.known(.unified).text)
        for options in [["--device", "Phone"], ["--out", "x.yaml"], ["--base", "estimates"], ["--force"]] {
            let run = try bench(["fit"] + options, in: ws.url)
            #expect(run.status == 2 && run.stderr.contains("\(options[0]): only with --sqldebug LOG"), "\(options): \(run.stderr)")
        }
        for options in [["--dry-run"], ["--profiles", "Out"], ["--evidence", "Evidence"], ["--progress"]] {
            let run = try bench(["fit", "--sqldebug", "device.log", "--device", "Phone"] + options, in: ws.url)
            #expect(run.status == 2 && run.stderr.contains("\(options[0]): only without --sqldebug"), "\(options): \(run.stderr)")
        }
        #expect(ws.tree() == ["device.log"])
    }
}
