import Foundation
import Synchronization

/// manifest.json: what makes a run reproducible.
public struct Manifest: Sendable, Codable, Equatable {
    public var scenario: String
    public var description: String
    public var seed: UInt64
    public var runID: String
    public var generatedAt: String
    public var resolvedScenario: String
    public var overrides: [String]
    public var variants: Int
    public var environment: [String: String]
    /// The cost profile of a simulated run (nil in real mode).
    public var profile: ProfileSummary? = nil
    /// Stopped by a signal (Ctrl-C, SIGTERM) before every variant ran: the report holds the variants that ran.
    public var interrupted: String? = nil
    /// Stopped by a failure after work began: the report holds the variants that finished.
    public var failed: String? = nil
    /// The scenario's objective (nil in folders written before it existed: the default applies).
    public var objective: [ObjectiveCriterion]? = nil
    /// The scenario's `knee:` (nil when it declares none).
    public var knee: Knee? = nil

    /// Where the sweep's thresholds are first missed (Docs/scenarios.md "knee"), a sentence per edge.
    public func kneeSentences(_ results: [VariantResult]) -> [String] { knee?.sentences(results) ?? [] }

    /// The variants ranked by the scenario's objective.
    /// A partial variant (stopped by a signal) is not ranked: its figures cover part of its run.
    public func ranking(_ results: [VariantResult]) -> Ranking {
        Ranking.make(results.filter { $0.partial == nil }, objective: objective ?? ObjectiveCriterion.defaultObjective)
    }
}

/// What a report says of the cost profile a simulated run used.
public struct ProfileSummary: Sendable, Codable, Equatable {
    public var name: String
    public var description: String
    public var fittedTo: String
    /// How many of the profile's costs are estimates, of how many.
    public var estimated: Int
    public var operations: Int
    /// The device its figures were measured on, and the command that wrote it, when the profile names them.
    public var device: String? = nil
    public var writtenBy: String? = nil
    /// What the evidence behind the profile determined (written by `ambar-bench fit`), when it says.
    public var evidence: String? = nil

    public init(_ profile: CostProfile) {
        name = profile.name
        description = profile.description
        fittedTo = profile.fittedTo
        estimated = profile.estimated.count
        operations = profile.nanos.count
        device = profile.device
        writtenBy = profile.writtenBy
        evidence = profile.evidence
    }
}

/// Writes `Reports/<scenario>/<run-id>/` whole or not at all: files go to a hidden folder first, which is
/// renamed into place at the end.
public enum ReportWriter {
    public static func environment() -> [String: String] {
        var env: [String: String] = [:]
        let info = ProcessInfo.processInfo
        env["host"] = info.hostName
        env["cores"] = String(info.activeProcessorCount)
        env["memory"] = "\(info.physicalMemory / 1_048_576) MiB"
        env["os"] = info.operatingSystemVersionString
        #if swift(>=6.3)
        env["toolchain"] = "Swift 6.3 or later"
        #else
        env["toolchain"] = "Swift 6"
        #endif
        #if DEBUG
        env["build"] = "debug"
        #else
        env["build"] = "release"
        #endif
        env["allocator"] = MemoryProbe.isAvailable ? "jemalloc (stats.allocated less tcache, stats.resident)" : "system malloc (resident from /proc)"
        env["gitRevision"] = gitRevision() ?? "unknown"
        return env
    }

    static func gitRevision() -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = ["rev-parse", "--short", "HEAD"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }

    /// The files of one run, by name.
    static func files(results: [VariantResult], manifest: Manifest, events: [String: [WriteEvent]]) throws -> [String: Data] {
        var files: [String: Data] = [:]
        files["metrics.csv"] = Data(try CSVOutput.metrics(results).utf8)
        files["summary.csv"] = Data(try CSVOutput.summary(results).utf8)
        files["timeseries.csv"] = Data(try CSVOutput.timeseries(results).utf8)
        files["ranking.csv"] = Data(try manifest.ranking(results).csv().utf8)
        if results.contains(where: { $0.repetition > 1 }) { files["repeats.csv"] = Data(try CSVOutput.repeats(results).utf8) }
        let lineEncoder = JSONEncoder()
        lineEncoder.outputFormatting = [.sortedKeys]
        var lines = Data()
        for r in results {
            for e in events["\(r.variant)#\(r.repetition)"] ?? [] {
                struct Line: Encodable { var scenario: String; var variant: String; var repetition: Int; var event: WriteEvent }
                lines += try lineEncoder.encode(Line(scenario: r.scenario, variant: r.variant, repetition: r.repetition, event: e))
                lines += Data("\n".utf8)
            }
        }
        files["events.jsonl"] = lines
        files["manifest.json"] = try encoder().encode(manifest)
        files["results.json"] = try encoder().encode(results)
        files["report.html"] = Data(HTMLReport.render(title: "\(manifest.scenario) — \(manifest.runID)", results: results, manifest: manifest, resolvedYAML: manifest.resolvedScenario).utf8)
        files["scenario.resolved.yaml"] = Data(manifest.resolvedScenario.utf8)
        return files
    }

    /// Writes a run's folder, then keeps `keep` runs of each scenario (ReportRetention); returns the folder.
    public static func write(results: [VariantResult], manifest: Manifest, events: [String: [WriteEvent]], reportsRoot: URL,
                             keep: ReportRetention.Keep = ReportRetention.defaultKeep) throws -> URL {
        let folder = try RunFolder(manifest: manifest, reportsRoot: reportsRoot)
        folder.keep = keep
        do {
            try folder.write(results: results, manifest: manifest, events: events)
            return try folder.finish()
        } catch {
            folder.discard()
            throw error
        }
    }

    /// A run folder written as the run goes: a hidden staging folder that always holds a whole
    /// report of the variants finished so far, moved into place when the run ends (or is interrupted).
    public final class RunFolder: @unchecked Sendable {  // the staging folder's files are touched under `lock` only
        public let final: URL
        let staging: URL
        let reportsRoot: URL
        /// The run id, made unique among the scenario's runs.
        public let runID: String
        /// How many runs of each scenario `finish()` keeps (Docs/workbench.md "Keeping reports").
        public var keep = ReportRetention.defaultKeep
        /// Where the baselines are: a run a baseline file names is never removed.
        public var baselines: URL? = URL(fileURLWithPath: "Scenarios/baselines", isDirectory: true)
        /// The older runs `finish()` removed.
        public private(set) var removed: [ReportRetention.Removal] = []
        /// Held while the staging folder is written or moved; true once it was moved (or let go).
        private let lock = Mutex(false)

        public init(manifest: Manifest, reportsRoot: URL) throws {
            let fm = FileManager.default
            let folder = reportsRoot.appendingPathComponent(manifest.scenario, isDirectory: true)
            // Run ids are to the second: a second run within it gets `-2`, `-3`, … rather than replacing the first.
            var runID = manifest.runID
            var n = 2
            while fm.fileExists(atPath: folder.appendingPathComponent(runID).path) || fm.fileExists(atPath: folder.appendingPathComponent(".\(runID).partial").path) {
                runID = "\(manifest.runID)-\(n)"
                n += 1
            }
            self.runID = runID
            self.reportsRoot = reportsRoot
            final = folder.appendingPathComponent(runID, isDirectory: true)
            staging = folder.appendingPathComponent(".\(runID).partial", isDirectory: true)
            do {
                try fm.createDirectory(at: staging, withIntermediateDirectories: true)
                // Whose staging folder this is: a later run removes it once this process is gone.
                try Data("\(getpid())\n".utf8).write(to: staging.appendingPathComponent(".owner"))
            } catch {
                throw WorkbenchError(.badInput, "cannot write the report to \(final.path): \(error.localizedDescription)")
            }
        }

        /// Replaces the staging folder's files with a whole report of `results`.
        public func write(results: [VariantResult], manifest: Manifest, events: [String: [WriteEvent]]) throws {
            var manifest = manifest
            manifest.runID = runID
            try lock.withLock { closed in
                guard !closed else { return }
                try writeFiles(results: results, manifest: manifest, events: events)
            }
        }

        private func writeFiles(results: [VariantResult], manifest: Manifest, events: [String: [WriteEvent]]) throws {
            do {
                for (name, data) in try ReportWriter.files(results: results, manifest: manifest, events: events) {
                    try data.write(to: staging.appendingPathComponent(name), options: .atomic)
                }
            } catch {
                throw WorkbenchError(.internalFailure, "cannot write the report to \(staging.path): \(error.localizedDescription) (\(results.count) variant(s) finished; what was written is in that folder)")
            }
        }

        /// Moves the report into place, removes the runs beyond `keep` (never this one) and rebuilds the index, so
        /// it links no removed run; returns the run folder.
        public func finish() throws -> URL {
            try lock.withLock { closed in
                guard !closed else { return }
                try moveIntoPlace()
                closed = true
            }
            removed = ReportRetention.prune(reportsRoot: reportsRoot, keep: keep, scenario: final.deletingLastPathComponent().lastPathComponent,
                                            keeping: [final], baselines: baselines)
            try ReportWriter.writeIndex(reportsRoot: reportsRoot)
            return final
        }

        private func moveIntoPlace() throws {
            let fm = FileManager.default
            do {
                try? fm.removeItem(at: staging.appendingPathComponent(".owner"))
                try fm.moveItem(at: staging, to: final)
            } catch {
                throw WorkbenchError(.internalFailure, "cannot move the report to \(final.path): \(error.localizedDescription) (it is in \(staging.path))")
            }
        }

        /// The process is about to exit (a second Ctrl-C): the report of the variants finished so far, already
        /// whole in the staging folder, is marked interrupted and moved into place, and the index updated. Nothing
        /// finished: the staging folder is removed. Returns the run folder, if one was kept.
        public func finishNow() -> URL? {
            let kept: Bool = lock.withLock { closed in
                guard !closed else { return false }
                closed = true
                let decoder = JSONDecoder()
                guard let data = try? Data(contentsOf: staging.appendingPathComponent("results.json")),
                      let results = try? decoder.decode([VariantResult].self, from: data), !results.isEmpty,
                      var manifest = try? decoder.decode(Manifest.self, from: Data(contentsOf: staging.appendingPathComponent("manifest.json"))) else {
                    try? FileManager.default.removeItem(at: staging)
                    return false
                }
                manifest.interrupted = "interrupted (a second signal) after \(results.count) finished variant run(s)"
                let report = HTMLReport.render(title: "\(manifest.scenario) — \(manifest.runID)", results: results, manifest: manifest, resolvedYAML: manifest.resolvedScenario)
                try? encoder().encode(manifest).write(to: staging.appendingPathComponent("manifest.json"), options: .atomic)
                try? Data(report.utf8).write(to: staging.appendingPathComponent("report.html"), options: .atomic)
                return (try? moveIntoPlace()) != nil
            }
            guard kept else { return nil }
            try? ReportWriter.writeIndex(reportsRoot: reportsRoot)
            return final
        }

        /// Removes the staging folder (nothing was written that is worth keeping).
        public func discard() {
            lock.withLock { closed in
                closed = true
                try? FileManager.default.removeItem(at: staging)
            }
        }
    }

    /// `Reports/index.html`: every run, newest first.
    public static func writeIndex(reportsRoot: URL) throws {
        let fm = FileManager.default
        var runs: [(scenario: String, run: String, verdict: String, variants: Int)] = []
        for scenario in (try? fm.contentsOfDirectory(atPath: reportsRoot.path)) ?? [] where !scenario.hasPrefix(".") {
            let dir = reportsRoot.appendingPathComponent(scenario)
            for run in (try? fm.contentsOfDirectory(atPath: dir.path)) ?? [] where !run.hasPrefix(".") {
                let resultsFile = dir.appendingPathComponent(run).appendingPathComponent("results.json")
                guard let data = try? Data(contentsOf: resultsFile), let results = try? JSONDecoder().decode([VariantResult].self, from: data) else { continue }
                let manifest = try? JSONDecoder().decode(Manifest.self, from: Data(contentsOf: dir.appendingPathComponent(run).appendingPathComponent("manifest.json")))
                runs.append((scenario, run, HTMLReport.overallVerdict(results, interrupted: manifest?.interrupted != nil, failed: manifest?.failed != nil), results.count))
            }
        }
        runs.sort { ($0.run, $0.scenario) > ($1.run, $1.scenario) }
        var html = """
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Ambar workbench reports</title>
        <style>body{font:14px -apple-system,Helvetica,Arial,sans-serif;max-width:900px;margin:24px auto;color:#1d2430}
        table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e6eaef;padding:5px 8px;text-align:left}
        .pass{color:#2e8b57}.fail{color:#c0392b}.unknown{color:#8a8f98}.interrupted{color:#b9770e}</style></head><body>
        <h1>Ambar workbench reports</h1><table><tr><th>run</th><th>scenario</th><th>variants</th><th>verdict</th></tr>

        """
        for r in runs {
            let link = HTMLReport.escape("\(r.scenario)/\(r.run)/report.html")
            html += "<tr><td><a href=\"\(link)\">\(HTMLReport.escape(r.run))</a></td><td>\(HTMLReport.escape(r.scenario))</td><td>\(r.variants)</td><td class=\"\(r.verdict)\">\(r.verdict)</td></tr>\n"
        }
        html += "</table></body></html>\n"
        try fm.createDirectory(at: reportsRoot, withIntermediateDirectories: true)
        try Data(html.utf8).write(to: reportsRoot.appendingPathComponent("index.html"))
    }
}
