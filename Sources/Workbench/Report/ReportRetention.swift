import Foundation

/// How many runs of each scenario `Reports/` keeps (Docs/workbench.md "Keeping reports"): after a run is written,
/// and on `ambar-bench clean-reports`, the older run folders of each scenario beyond the last N are removed.
///
/// Only run folders this workbench wrote are candidates: a real directory `Reports/<scenario>/<run>/` (neither a
/// symbolic link), not hidden, whose `manifest.json` decodes and names that scenario and that run. Anything else in
/// `Reports/` is left alone. A run named in a baseline file, and the run just written, are never removed; the
/// newest run of each scenario always stays (N is at least 1).
public enum ReportRetention {
    /// How many runs of each scenario to keep.
    public enum Keep: Sendable, Equatable, CustomStringConvertible {
        case last(Int)
        case all

        public var description: String {
            switch self {
            case let .last(n): "the last \(n)"
            case .all: "all"
            }
        }
    }

    /// Five runs of each scenario: enough to compare a change with the runs before it.
    public static let defaultKeep = Keep.last(5)
    /// The environment variable that sets the count when `--keep` is not given (`KEEP=N` in the Makefile).
    public static let environmentVariable = "AMBAR_KEEP_RUNS"

    /// `all`, or a count of 1 or more.
    public static func parse(_ text: String, source: String = "--keep") throws -> Keep {
        let word = text.trimmingCharacters(in: .whitespaces)
        if word.lowercased() == "all" { return .all }
        guard let n = Int(word), n >= 1 else {
            throw WorkbenchError(.badInput, "\(source) takes a count of runs per scenario, 1 or more, or `all` to keep every run; found '\(text)'")
        }
        return .last(n)
    }

    /// `--keep` when given, else the environment variable, else the default.
    public static func resolve(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Keep {
        if let option { return try parse(option) }
        if let value = environment[environmentVariable], !value.isEmpty { return try parse(value, source: environmentVariable) }
        return defaultKeep
    }

    /// One run folder this workbench wrote.
    public struct Run: Sendable, Equatable {
        public var scenario: String
        public var name: String
        public var folder: URL
        /// When its report was last written (the manifest's `generatedAt`).
        var written: Date
        /// The `-2`, `-3`, … a run started within the same second as another gets (1 without).
        var sequence: Int
        /// Runs of one `--shard i/n` position are counted apart: a later `merge` needs one of each.
        var group: String

        /// Older first: by the recorded time, then the sequence number, then the name.
        static func isOlder(_ a: Run, _ b: Run) -> Bool {
            (a.written, a.sequence, a.name) < (b.written, b.sequence, b.name)
        }
    }

    /// A run folder removed, and the bytes it held.
    public struct Removal: Sendable, Equatable {
        public var run: Run
        public var bytes: Int64
    }

    /// The run folders under `reportsRoot`, oldest first within each scenario (scenarios by name).
    public static func runs(reportsRoot: URL) -> [Run] {
        let fm = FileManager.default
        var runs: [Run] = []
        let decoder = JSONDecoder()
        for scenario in ((try? fm.contentsOfDirectory(atPath: reportsRoot.path)) ?? []).sorted() where !scenario.hasPrefix(".") {
            let dir = reportsRoot.appendingPathComponent(scenario, isDirectory: true)
            guard isRealDirectory(dir) else { continue }
            for name in (try? fm.contentsOfDirectory(atPath: dir.path)) ?? [] where !name.hasPrefix(".") {
                let folder = dir.appendingPathComponent(name, isDirectory: true)
                let manifestFile = folder.appendingPathComponent("manifest.json")
                guard isRealDirectory(folder), fileType(manifestFile) == .typeRegular,
                      let data = try? Data(contentsOf: manifestFile),
                      let manifest = try? decoder.decode(Manifest.self, from: data),
                      manifest.scenario == scenario, manifest.runID == name else { continue }
                let written = ISO8601DateFormatter().date(from: manifest.generatedAt) ?? .distantPast
                let (sequence, shard) = nameParts(name)
                runs.append(Run(scenario: scenario, name: name, folder: folder, written: written, sequence: sequence,
                                group: shard.map { "\(scenario) \($0)" } ?? scenario))
            }
        }
        return runs.sorted { $0.scenario != $1.scenario ? $0.scenario < $1.scenario : Run.isOlder($0, $1) }
    }

    /// The newest run of `scenario` (what `ambar-bench guide` reads); retention always keeps it.
    public static func newest(of scenario: String, reportsRoot: URL) -> Run? {
        runs(reportsRoot: reportsRoot).last { $0.scenario == scenario }
    }

    /// Removes the runs beyond the last `keep` of each scenario (of `scenario` alone when given), except those in
    /// `keeping` and those a baseline file in `baselines` names (`<scenario>/<run>` in its text). Returns what it
    /// removed, oldest first within each scenario.
    @discardableResult
    public static func prune(reportsRoot: URL, keep: Keep, scenario: String? = nil, keeping: [URL] = [], baselines: URL? = nil) -> [Removal] {
        guard case let .last(count) = keep else { return [] }
        let kept = Set(keeping.map { $0.standardizedFileURL.path })
        let baselineTexts = baselines.map(baselineTexts) ?? []
        var removals: [Removal] = []
        let all = runs(reportsRoot: reportsRoot).filter { scenario == nil || $0.scenario == scenario }
        for group in Set(all.map(\.group)).sorted() {
            let older = all.filter { $0.group == group }.dropLast(max(count, 1))
            for run in older {
                guard !kept.contains(run.folder.standardizedFileURL.path),
                      !baselineTexts.contains(where: { $0.contains("\(run.scenario)/\(run.name)") }) else { continue }
                let bytes = size(of: run.folder)
                if (try? FileManager.default.removeItem(at: run.folder)) != nil { removals.append(Removal(run: run, bytes: bytes)) }
            }
        }
        return removals
    }

    /// A sentence for the progress line or `clean-reports`: how many runs went and the space freed.
    public static func summary(_ removals: [Removal], keep: Keep) -> String {
        let bytes = removals.reduce(Int64(0)) { $0 + $1.bytes }
        return "removed \(removals.count) older run(s), \(byteText(bytes)) freed (keeping \(keep) run(s) of each scenario)"
    }

    /// Bytes as a person reads them: `12.3 MB`.
    public static func byteText(_ bytes: Int64) -> String {
        bytes >= 1_000_000 ? String(format: "%.1f MB", Double(bytes) / 1_000_000) : bytes >= 1000 ? String(format: "%.1f kB", Double(bytes) / 1000) : "\(bytes) bytes"
    }

    /// The sequence number and the shard position (`shard1of4`) a run id carries after its time stamp.
    static func nameParts(_ name: String) -> (sequence: Int, shard: String?) {
        let parts = name.split(separator: "-").map(String.init)
        let shard = parts.first { $0.hasPrefix("shard") && $0.contains("of") }
        // `yyyyMMdd-HHmmss` then the optional words; a trailing number after them is the sequence.
        guard parts.count > 2, let last = parts.last, let n = Int(last), last.count < 6 else { return (1, shard) }
        return (n, shard)
    }

    static func baselineTexts(_ folder: URL) -> [String] {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        return files.compactMap { try? String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }
    }

    static func fileType(_ url: URL) -> FileAttributeType? {
        // attributesOfItem does not follow a symbolic link: a link is reported as one.
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.type] as? FileAttributeType
    }

    static func isRealDirectory(_ url: URL) -> Bool { fileType(url) == .typeDirectory }

    /// The bytes of the regular files below `folder`, without following symbolic links.
    static func size(of folder: URL) -> Int64 {
        let fm = FileManager.default
        var total: Int64 = 0
        for name in (try? fm.contentsOfDirectory(atPath: folder.path)) ?? [] {
            let item = folder.appendingPathComponent(name)
            guard let attributes = try? fm.attributesOfItem(atPath: item.path) else { continue }
            switch attributes[.type] as? FileAttributeType {
            case .typeDirectory?: total += size(of: item)
            case .typeRegular?: total += (attributes[.size] as? NSNumber)?.int64Value ?? 0
            default: break
            }
        }
        return total
    }
}
