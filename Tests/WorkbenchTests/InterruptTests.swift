import Foundation
import Synchronization
import Testing
@testable import Workbench

/// Ctrl-C and progress inside a phase (Docs/workbench.md "Ctrl-C and progress"), end to end through the built
/// `ambar-bench`: a long import told to stop says so at once, stops at its next chunk and keeps what ran, marked.
@Suite("Ctrl-C and progress (Docs/workbench.md: Ctrl-C and progress)", .serialized)
struct InterruptTests {
    /// One phase importing far more objects than the test waits for, and a small variant before it.
    static let longImport = """
        name: long
        seed: 3
        stack: { topology: ambar }
        phases:
          - name: load
            actors:
              - importer: { objects: 2000000, chunkSize: 500 }
          - name: verify
        matrix:
          phases.load.importer.objects: [300, 2000000]
        """

    /// `ambar-bench` started in `directory`, its stderr read as it comes.
    final class Running: @unchecked Sendable {  // `process` is used by the test's thread only
        let process: Process
        /// stderr and stdout as read so far.
        private let texts = Mutex(["", ""])

        init(_ arguments: [String], in directory: URL) throws {
            let (process, out, err) = try startBench(arguments, in: directory)
            self.process = process
            for (n, pipe) in [err, out].enumerated() {
                Thread { [self] in
                    while true {
                        let data = pipe.fileHandleForReading.availableData
                        if data.isEmpty { break }
                        texts.withLock { $0[n] += String(decoding: data, as: UTF8.self) }
                    }
                }.start()
            }
        }

        var stderr: String { texts.withLock { $0[0] } }

        /// Waits (up to `seconds`) until stderr holds a line for which `matches` is true.
        @discardableResult
        func waitForLine(within seconds: Double, _ matches: (Substring) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if stderr.split(separator: "\n").contains(where: matches) { return true }
                usleep(10_000)
            }
            return false
        }

        /// Waits (up to `seconds`) for the process to end; returns the wall seconds it took, nil when it did not.
        func waitForExit(within seconds: Double) -> Double? {
            let began = Date()
            while process.isRunning {
                if Date().timeIntervalSince(began) > seconds {
                    process.terminate()
                    kill(process.processIdentifier, SIGKILL)
                    return nil
                }
                usleep(10_000)
            }
            return Date().timeIntervalSince(began)
        }
    }

    /// The progress line of the long variant (its phase `load` counts the import's 2,000,000 objects).
    static func isLongProgress(_ line: Substring) -> Bool { line.contains("importer.objects=2000000: phase 1/2 load: ") && line.contains("/2,000,000 objects") }

    @Test("Ctrl-C during a long import: said at once, the variant stops at its next chunk and is kept partial; the run is interrupted (exit 130), not pass; --progress shows objects, the clock and the time left")
    func ctrlCStopsTheVariantInProgress() throws {
        let ws = try CLITests.workspace()
        try ws.write("long.yaml", Self.longImport)
        let run = try Running(["run", "long.yaml", "--out", "out", "--progress"], in: ws.url)
        let sawProgress = run.waitForLine(within: 60, Self.isLongProgress)
        try #require(sawProgress, "no progress line for the long variant: \(run.stderr)")
        // --progress without a terminal: objects done of total, the clock reached, an estimate of what is left.
        let line = try #require(run.stderr.split(separator: "\n").first(where: Self.isLongProgress))
        #expect(line.contains("objects (") && line.contains("clock ") && line.contains("(phase ") && (line.contains(" left") || line.contains("estimating")), "\(line)")
        kill(run.process.processIdentifier, SIGINT)
        // The message comes at once, and the process ends soon after (a bound for a loaded machine, not a timing).
        #expect(run.waitForLine(within: 1) { $0.hasPrefix("interrupted: stopping long phases.load.importer.objects=2000000 #1 at its next chunk") }, "\(run.stderr)")
        let exited = run.waitForExit(within: 10)
        #expect(exited != nil, "still running 10 s after Ctrl-C: \(run.stderr)")
        #expect(run.process.terminationStatus == 130, "\(run.stderr)")
        let folder = try #require(CLITests.runFolders(ws, scenario: "long").first)
        let results = try JSONDecoder().decode([VariantResult].self, from: Data(contentsOf: ws.file("out/long/\(folder)/results.json")))
        #expect(results.map(\.partial?.isEmpty) == [nil, false])
        let partial = try #require(results.last?.partial)
        #expect(partial.hasPrefix("interrupted in phase 1/2 load at ") && partial.contains(" of 2,000,000 objects"), "\(partial)")
        // Rows of the partial variant were stored, and far fewer than asked for.
        let inserted = results.last?.counters["rowsInserted"] ?? 0
        #expect(inserted > 0 && inserted < 2_000_000)
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: ws.file("out/long/\(folder)/manifest.json")))
        #expect(manifest.interrupted?.hasPrefix("interrupted (a signal) in variant 2 of 2, kept partial") == true, "\(manifest.interrupted ?? "nil")")
        let summary = try String(contentsOf: ws.file("out/long/\(folder)/summary.csv"), encoding: .utf8).split(separator: "\n")
        #expect(summary.first?.hasSuffix(",status") == true && summary[1].hasSuffix(",complete") && summary[2].hasSuffix(",partial"))
        let report = try String(contentsOf: ws.file("out/long/\(folder)/report.html"), encoding: .utf8)
        #expect(report.contains("<span class=\"verdict interrupted\">INTERRUPTED</span>") && report.contains("is partial (interrupted in phase 1/2 load"))
        let index = try String(contentsOf: ws.file("out/index.html"), encoding: .utf8)
        #expect(index.contains("<td class=\"interrupted\">interrupted</td>") && !index.contains(">pass<"))
    }

    @Test("A second Ctrl-C quits at once and keeps the finished variants' report, marked interrupted")
    func secondCtrlCQuitsKeepingWhatFinished() throws {
        let ws = try CLITests.workspace()
        try ws.write("long.yaml", Self.longImport)
        let run = try Running(["run", "long.yaml", "--out", "out", "--progress"], in: ws.url)
        try #require(run.waitForLine(within: 60, Self.isLongProgress), "no progress line for the long variant: \(run.stderr)")
        kill(run.process.processIdentifier, SIGINT)
        try #require(run.waitForLine(within: 5) { $0.hasPrefix("interrupted: stopping") }, "\(run.stderr)")
        kill(run.process.processIdentifier, SIGINT)
        #expect(run.waitForExit(within: 10) != nil, "still running after a second Ctrl-C: \(run.stderr)")
        #expect(run.process.terminationStatus == 130)
        #expect(run.stderr.contains("interrupted again: quitting now; the finished variants are in "), "\(run.stderr)")
        let folder = try #require(CLITests.runFolders(ws, scenario: "long").first)
        let results = try JSONDecoder().decode([VariantResult].self, from: Data(contentsOf: ws.file("out/long/\(folder)/results.json")))
        #expect(results.map(\.variant) == ["phases.load.importer.objects=300"])
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: ws.file("out/long/\(folder)/manifest.json")))
        #expect(manifest.interrupted == "interrupted (a second signal) after 1 finished variant run(s)")
        #expect(try String(contentsOf: ws.file("out/index.html"), encoding: .utf8).contains("<td class=\"interrupted\">interrupted</td>"))
        #expect(!ws.tree().contains { $0.contains(".partial") })
    }

    @Test("The progress line: objects done of total, the clock reached (and the phase's duration), the time left at the rate so far")
    func progressLine() {
        var p = PhaseProgress(variant: "s v", phase: "run", phaseIndex: 2, phases: 3, objectsDone: 40_000, objectsTotal: 1_000_000,
                              reachedSeconds: 12.345, phaseSeconds: 2.1, phaseDuration: 300, wallSeconds: 4)
        #expect(p.line == "s v: phase 2/3 run: 40,000/1,000,000 objects (4%), clock 12.3 s (phase 2.10 s of 300.0 s), about 1m 36s left")
        // Nothing to count: the time left from the clock against the phase's duration.
        p.objectsTotal = 0
        #expect(p.line == "s v: phase 2/3 run: clock 12.3 s (phase 2.10 s of 300.0 s), about 9m 28s left")
        p.phaseDuration = nil
        #expect(p.line == "s v: phase 2/3 run: clock 12.3 s (phase 2.10 s)")
        // Objects to count, none done yet: no rate to go by.
        p.objectsTotal = 10
        p.objectsDone = 0
        #expect(p.line == "s v: phase 2/3 run: 0/10 objects (0%), clock 12.3 s (phase 2.10 s), estimating time left")
    }

    @Test("A partial variant is not ranked, and a run stopped by a failure reads fail, not interrupted")
    func partialIsNotRankedAndFailureIsFail() {
        var results = ReportGoldenTests.results
        results[0].partial = "phase load, 500 of 2,000,000 objects"
        let ranking = ReportGoldenTests.manifest.ranking(results)
        #expect(ranking.entries.map(\.variant) == [results[1].variant])
        #expect(HTMLReport.overallVerdict(results, interrupted: false) == "interrupted")
        #expect(HTMLReport.overallVerdict(ReportGoldenTests.results, interrupted: false, failed: true) == "fail")
        #expect(HTMLReport.overallVerdict(ReportGoldenTests.results, interrupted: true) == "interrupted")
        var failed = ReportGoldenTests.manifest
        failed.failed = "failed at variant 2 of 2: disk full"
        let html = HTMLReport.render(title: "t", results: [ReportGoldenTests.results[0]], manifest: failed, resolvedYAML: "")
        #expect(html.contains("FAIL</span>") && html.contains("Not every variant ran: failed at variant 2 of 2: disk full"))
    }
}
