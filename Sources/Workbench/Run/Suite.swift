import Foundation
import TraceReplay
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs scenario files and writes their reports: the work behind `ambar-bench run`, `sweep` and `check`.
public struct Suite {
    public struct Options: Sendable {
        public var overrides: [String] = []
        public var reportsRoot = URL(fileURLWithPath: "Reports", isDirectory: true)
        /// Run every n-th variant: (index, count), 1-based index.
        public var shard: (Int, Int)?
        public var progress: (@Sendable (String) -> Void)?
        public var runID: String?
        /// Where to write the trace of every simulated variant (JSON Lines).
        public var trace: URL?
        /// Where to write each simulated variant's operation trace (Docs/calibration.md): a `.jsonl` file when the
        /// run has one variant, else a folder that gets `<scenario>-<variant>.jsonl` per variant.
        public var operationTrace: URL?
        /// Asked before each variant: true stops the run there, keeping what finished (default: a signal came).
        public var shouldStop: @Sendable () -> Bool = { Suite.stopRequested.load(ordering: .relaxed) }
        /// Asked by the variant in progress between its chunks and operations: true stops it there, and its result
        /// is kept marked partial (default: a signal came).
        public var stopsVariant: @Sendable () -> Bool = { Suite.stopRequested.load(ordering: .relaxed) }
        /// Told of the phase in progress about four times a second (objects done, the clock, time left).
        public var phaseProgress: (@Sendable (PhaseProgress) -> Void)?
        /// Each variant's memory is measured once the previous variant's objects are freed (up to 0.5 s): for a
        /// process that runs nothing else meanwhile, as `ambar-bench` does.
        public var waitsForPreviousVariant = false
        /// How many runs of each scenario to keep once a run is written (Docs/workbench.md "Keeping reports").
        public var keep = ReportRetention.defaultKeep
        public init() {}
    }

    public struct Outcome: Sendable {
        public var folder: URL
        public var results: [VariantResult]
        /// Threshold misses and oracle failures, for the exit code.
        public var failures: [String]
        /// The run was stopped by a signal before every variant ran.
        public var interrupted = false
        /// The variants by the scenario's objective.
        public var ranking: Ranking? = nil
        /// Where the sweep's thresholds are first missed (the scenario's `knee:`), a sentence per edge.
        public var knee: [String] = []
    }

    /// Set by SIGINT / SIGTERM (`ambar-bench` installs the handler): the variant in progress stops at its next
    /// chunk, and the run writes what ran, the stopped variant marked partial and the run interrupted.
    public static let stopRequested = Atomic<Bool>(false)

    /// The variant in progress (`scenario variant #repetition`), for the message a signal prints.
    public static var variantInProgress: String? { inProgress.withLock { $0.variant } }

    private struct InProgress {
        var variant: String?
        var folder: ReportWriter.RunFolder?
    }
    private static let inProgress = Mutex(InProgress())

    /// A second signal: moves the report of the variants finished so far into place (marked interrupted) and
    /// updates the index, so that exiting at once loses nothing that finished. Returns the run folder, if any.
    @discardableResult
    public static func keepFinishedNow() -> URL? {
        guard let folder = inProgress.withLock({ state -> ReportWriter.RunFolder? in
            defer { state.folder = nil }
            return state.folder
        }) else { return nil }
        return folder.finishNow()
    }

    /// Validates every file first (nothing runs on bad input), then runs each file's variants.
    public static func run(files: [String], options: Options) throws -> [Outcome] {
        let loaded = try files.map { try ScenarioLoader.load(file: $0, overrides: options.overrides) }
        if let target = options.operationTrace {
            // Checked before anything runs: a bad --operation-trace leaves no half-written report.
            let variants = loaded.flatMap(\.variants)
            for v in variants { try OperationTraceFiles.check(v, target: target, variants: variants.count) }
        }
        try checkWritable(options.reportsRoot)
        let cleaned = cleanLeftovers(reportsRoot: options.reportsRoot)
        if cleaned > 0 { options.progress?("removed \(cleaned) folder(s) left by interrupted runs") }
        var outcomes: [Outcome] = []
        let traceWriter = try options.trace.map(TraceWriter.init(url:))
        let runID = options.runID ?? Self.newRunID(shard: options.shard)
        for file in loaded {
            var variants = file.variants
            if let (i, n) = options.shard { variants = variants.enumerated().filter { $0.offset % n == i - 1 }.map(\.element) }
            guard !variants.isEmpty else { continue }
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-bench-\(getpid())-\(UUID().uuidString)", isDirectory: true)
            defer { try? FileManager.default.removeItem(at: work) }
            var results: [VariantResult] = []
            let started = Date()
            let first = variants[0]
            func manifest(_ results: [VariantResult], interrupted: String? = nil, failed: String? = nil) -> Manifest {
                Manifest(
                    scenario: first.name, description: first.description, seed: first.seed, runID: runID,
                    generatedAt: ISO8601DateFormatter().string(from: Date()), resolvedScenario: file.resolvedYAML, overrides: options.overrides,
                    variants: results.count, environment: ReportWriter.environment(),
                    profile: first.mode == .simulated ? (try? CostProfile.load(first.profile)).map(ProfileSummary.init) : nil,
                    interrupted: interrupted, failed: failed,
                    objective: first.objective, knee: first.knee)
            }
            func events(_ results: [VariantResult]) -> [String: [WriteEvent]] {
                var events: [String: [WriteEvent]] = [:]
                for r in results { events["\(r.variant)#\(r.repetition)"] = r.events }
                return events
            }
            // The run folder is written as each variant finishes, so a failure or an interruption
            // keeps every finished variant.
            let runFolder = try ReportWriter.RunFolder(manifest: manifest([]), reportsRoot: options.reportsRoot)
            runFolder.keep = options.keep
            Self.inProgress.withLock { $0.folder = runFolder }
            defer { Self.inProgress.withLock { $0 = InProgress() } }
            var stoppedBy: String?
            for (n, variant) in variants.enumerated() {
                if options.shouldStop() {
                    stoppedBy = "interrupted (a signal) after \(n) of \(variants.count) variant run(s)"
                    break
                }
                Self.inProgress.withLock { $0.variant = "\(variant.name) \(variant.variantName) #\(variant.repetition)" }
                let elapsed = Date().timeIntervalSince(started)
                let eta = n == 0 ? "" : String(format: ", ETA %.0fs", elapsed / Double(n) * Double(variants.count - n))
                options.progress?("\(variant.name): variant \(n + 1)/\(variants.count) \(variant.variantName) #\(variant.repetition) (elapsed \(Int(elapsed))s\(eta))")
                traceWriter?.begin(variant)
                var tracer: (@Sendable (TraceRecord) -> Void)?
                if let traceWriter { tracer = { traceWriter.record($0) } }
                let progress = options.progress
                var runner = VariantRunner(scenario: variant, workDirectory: work, progress: { line in progress?("  \(line)") }, tracer: tracer)
                runner.waitsForPreviousVariant = options.waitsForPreviousVariant
                runner.shouldStop = options.stopsVariant
                runner.phaseProgress = options.phaseProgress
                var traceFile: OperationTraceFileWriter?
                if let target = options.operationTrace {
                    let file = try OperationTraceFiles.file(for: variant, target: target)
                    traceFile = OperationTraceFileWriter(file: file)
                    runner.operationTraceFile = traceFile
                }
                do {
                    results.append(try runner.run())
                    if let traceFile {
                        if let failure = traceFile.outcome {
                            progress?("  operation trace: cannot write \(traceFile.file.path): \(failure)")
                        } else {
                            progress?("  operation trace: \(traceFile.file.path) (\(traceFile.written) records, at most \(traceFile.mostHeld) held in memory)")
                        }
                    }
                } catch {
                    // Keep what finished, then report the failure (after work began: not the input's fault).
                    if !results.isEmpty {
                        try? runFolder.write(results: results, manifest: manifest(results, failed: "failed at variant \(n + 1) of \(variants.count): \(error)"), events: events(results))
                        _ = try? runFolder.finish()
                    } else {
                        runFolder.discard()
                    }
                    if let error = error as? WorkbenchError, error.kind == .badInput { throw error }
                    throw WorkbenchError(.internalFailure, "\(variant.name) \(variant.variantName): \(error)\(results.isEmpty ? "" : " (\(results.count) finished variant(s) kept in \(runFolder.final.path))")")
                }
                if let partial = results.last?.partial {
                    stoppedBy = "interrupted (a signal) in variant \(n + 1) of \(variants.count), kept partial: \(partial)"
                    break
                }
                if n + 1 < variants.count { try runFolder.write(results: results, manifest: manifest(results, interrupted: "in progress: \(n + 1) of \(variants.count) variant run(s)"), events: events(results)) }
            }
            let final = manifest(results, interrupted: stoppedBy)
            try runFolder.write(results: results, manifest: final, events: events(results))
            let folder = try runFolder.finish()
            if !runFolder.removed.isEmpty { options.progress?("\(first.name): \(ReportRetention.summary(runFolder.removed, keep: options.keep))") }
            var outcomeFailures = failures(results)
            if let stoppedBy { outcomeFailures.append("\(first.name): \(stoppedBy); the report holds the variants that ran") }
            outcomes.append(Outcome(folder: folder, results: results, failures: outcomeFailures, interrupted: stoppedBy != nil,
                                    ranking: final.ranking(results), knee: final.kneeSentences(results)))
            if stoppedBy != nil { break }

        }
        return outcomes
    }

    static func failures(_ results: [VariantResult]) -> [String] {
        var failures: [String] = []
        // A partial variant's figures cover part of its run: the run is interrupted, not failed by them.
        for r in results where r.partial == nil {
            for t in r.thresholds where !t.passed && t.fails {
                failures.append("\(r.scenario) \(r.variant) #\(r.repetition): threshold \(t.metric).\(t.statistic) = \(t.value.map { String($0) } ?? "missing") (limit \(t.limit))")
            }
            if r.oracle.verdict == .fail { failures.append("\(r.scenario) \(r.variant) #\(r.repetition): oracle: \(r.oracle.summary)") }
        }
        return failures
    }

    static func newRunID(shard: (Int, Int)?) -> String {
        let f = DateFormatter()
        f.dateFormat = "yyyyMMdd-HHmmss"
        f.timeZone = TimeZone(identifier: "UTC")
        var id = f.string(from: Date())
        if let (i, n) = shard { id += "-shard\(i)of\(n)" }
        return id
    }

    /// What a killed run left behind: its temporary store folders (`ambar-bench-<pid>-…`) and its
    /// report's staging folder (`.<run>.partial`, owned by the pid in its `.owner` file), once that process is gone.
    /// Returns how many folders it removed.
    @discardableResult
    public static func cleanLeftovers(reportsRoot: URL) -> Int {
        let fm = FileManager.default
        var removed = 0
        func alive(_ pid: Int32) -> Bool { pid > 0 && (kill(pid, 0) == 0 || errno == EPERM) }
        let temporary = fm.temporaryDirectory
        for name in (try? fm.contentsOfDirectory(atPath: temporary.path)) ?? [] where name.hasPrefix("ambar-bench-") {
            let parts = name.split(separator: "-")
            guard parts.count > 3, let pid = Int32(parts[2]), !alive(pid) else { continue }
            if (try? fm.removeItem(at: temporary.appendingPathComponent(name))) != nil { removed += 1 }
        }
        for scenario in (try? fm.contentsOfDirectory(atPath: reportsRoot.path)) ?? [] where !scenario.hasPrefix(".") {
            let dir = reportsRoot.appendingPathComponent(scenario)
            for name in (try? fm.contentsOfDirectory(atPath: dir.path)) ?? [] where name.hasPrefix(".") && name.hasSuffix(".partial") {
                let staging = dir.appendingPathComponent(name)
                let owner = (try? String(contentsOf: staging.appendingPathComponent(".owner"), encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                let age = ((try? fm.attributesOfItem(atPath: staging.path)[.modificationDate]) as? Date).map { Date().timeIntervalSince($0) } ?? 0
                // An owner that is gone, or (older runs wrote no owner) a staging folder an hour old.
                let abandoned = owner.map { !alive($0) } ?? (age > 3600)
                if abandoned, (try? fm.removeItem(at: staging)) != nil { removed += 1 }
            }
        }
        return removed
    }

    static func checkWritable(_ root: URL) throws {
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: root, withIntermediateDirectories: true)
            let probe = root.appendingPathComponent(".write-probe-\(UUID().uuidString)")
            try Data().write(to: probe)
            try fm.removeItem(at: probe)
        } catch {
            throw WorkbenchError(.badInput, "the output directory \(root.path) cannot be written: \(error.localizedDescription)")
        }
    }

    /// Combines shard run folders into one report (`ambar-bench merge`).
    public static func merge(folders: [URL], reportsRoot: URL, keep: ReportRetention.Keep = ReportRetention.defaultKeep) throws -> URL {
        var results: [VariantResult] = []
        var manifest: Manifest?
        var events: [String: [WriteEvent]] = [:]
        for folder in folders {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent("results.json")),
                  let part = try? JSONDecoder().decode([VariantResult].self, from: data),
                  let m = try? JSONDecoder().decode(Manifest.self, from: Data(contentsOf: folder.appendingPathComponent("manifest.json"))) else {
                throw WorkbenchError(.badInput, "\(folder.path) is not a run folder (results.json and manifest.json)")
            }
            if let existing = manifest, existing.scenario != m.scenario {
                throw WorkbenchError(.badInput, "\(folder.path) is a run of \(m.scenario), not \(existing.scenario)")
            }
            // Shards of one run only: the same scenario text, overrides and seed, each variant once.
            if let existing = manifest, existing.resolvedScenario != m.resolvedScenario || existing.overrides != m.overrides || existing.seed != m.seed {
                throw WorkbenchError(.badInput, "\(folder.path) ran \(m.scenario) with another scenario file, overrides or seed (seed \(m.seed), not \(existing.seed)): shards to merge come from one command")
            }
            if let twice = part.first(where: { r in results.contains { $0.variant == r.variant && $0.repetition == r.repetition } }) {
                throw WorkbenchError(.badInput, "\(folder.path) repeats \(twice.variant) #\(twice.repetition), already in an earlier folder (the same shard given twice?)")
            }
            manifest = manifest ?? m
            results += part
            if let lines = try? String(contentsOf: folder.appendingPathComponent("events.jsonl"), encoding: .utf8) {
                struct Line: Decodable { var variant: String; var repetition: Int; var event: WriteEvent }
                for line in lines.split(separator: "\n") {
                    if let l = try? JSONDecoder().decode(Line.self, from: Data(line.utf8)) { events["\(l.variant)#\(l.repetition)", default: []].append(l.event) }
                }
            }
        }
        guard var merged = manifest else { throw WorkbenchError(.badInput, "no run folders given") }
        merged.runID = newRunID(shard: nil) + "-merged"
        merged.variants = results.count
        results.sort { ($0.variant, $0.repetition) < ($1.variant, $1.repetition) }
        return try ReportWriter.write(results: results, manifest: merged, events: events, reportsRoot: reportsRoot, keep: keep)
    }
}

/// Where `run --operation-trace` writes each variant's operation trace.
enum OperationTraceFiles {
    static func check(_ variant: Scenario, target: URL, variants: Int) throws {
        guard variant.mode == .simulated else {
            throw WorkbenchError(.badInput, "--operation-trace needs simulated mode (\(variant.name) \(variant.variantName) runs in real mode)")
        }
        if target.pathExtension == "jsonl" {
            guard variants == 1 else {
                throw WorkbenchError(.badInput, "--operation-trace \(target.path): the run has \(variants) variants; give a folder (one file per variant) or pick one variant with -p")
            }
        }
    }

    /// The file of `variant`'s trace under `target` (checked with ``check(_:target:variants:)`` before the run).
    static func file(for variant: Scenario, target: URL) throws -> URL {
        if target.pathExtension == "jsonl" {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            return target
        }
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let name = "\(variant.name)-\(variant.variantName)\(variant.repetition > 1 ? "-\(variant.repetition)" : "")"
            .map { $0.isLetter || $0.isNumber || "-_.=".contains($0) ? $0 : "_" }
        return target.appendingPathComponent(String(name) + ".jsonl")
    }
}
