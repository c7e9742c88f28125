import Foundation
import TraceReplay

/// `ambar-bench replay-trace FILE`: replays an operation trace through ObjectGraph and compares its counts with the
/// run's, over the whole run and step by step (Docs/calibration.md "Checking a trace here").
public struct TraceCheck: Sendable {
    public var header: TraceHeader
    public var outcome: ReplayOutcome
    /// Every counter of the whole run, the run's beside the replay's.
    public var overall: [CountDiffRow]
    /// Each record's counts, the run's beside the replay's.
    public var steps: [CountDiffRow]

    /// Whether the replay reproduced the run: no call gave another result, and every count is the same.
    public var matches: Bool { outcome.divergences.isEmpty && overall.allSatisfy { $0.difference == 0 } && outcome.expected != nil }

    public static func run(file: URL) throws -> TraceCheck {
        let header: TraceHeader, records: [OperationRecord]
        do { (header, records) = try TraceCoding.read(file) } catch let error as ReplayError { throw WorkbenchError(.badInput, error.message) }
        let outcome: ReplayOutcome
        do { outcome = try ObjectGraphReplayBackend.replay(header: header, records: records, keepsSteps: true) } catch let error as ReplayError {
            throw WorkbenchError(.checkFailed, "\(file.path): the replay stopped: \(error.message)")
        }
        return TraceCheck(header: header, outcome: outcome, overall: CountDiff.overall(ours: outcome.expected ?? [:], theirs: outcome.counts),
                          steps: CountDiff.steps(records: records, replayed: outcome.steps))
    }

    /// The diff as a JSON document (ours: the traced run, theirs: this replay).
    public var document: CountDiff.Document {
        CountDiff.Document(ours: "ObjectGraph, simulated run (\(header.scenario) \(header.variant), seed \(header.seed))",
                           theirs: "ObjectGraph, replay of the operation trace", overall: overall, steps: steps)
    }

    /// What the command prints: the whole run's counts, then the steps whose counts differ (at most `limit`).
    public func text(limit: Int = 20) -> String {
        var lines = ["replay of \(header.scenario) \(header.variant) (seed \(header.seed), profile \(header.profile))"]
        if outcome.expected == nil { lines.append("the trace has no end record: the run's counts are unknown") }
        let width = max(8, overall.map(\.counter.count).max() ?? 0)
        lines.append("counter".padding(toLength: width, withPad: " ", startingAt: 0) + "         run      replay  difference")
        for r in overall {
            lines.append(r.counter.padding(toLength: width, withPad: " ", startingAt: 0) + String(format: " %11d %11d %11d", r.ours, r.theirs, r.difference))
        }
        let differing = steps.filter { $0.difference != 0 }
        if !differing.isEmpty {
            lines.append("steps whose counts differ: \(Set(differing.compactMap(\.n)).count) (first \(min(limit, differing.count)) rows)")
            for r in differing.prefix(limit) { lines.append("  record \(r.n ?? 0) \(r.op ?? "") [\(r.thread ?? "")] \(r.counter): run \(r.ours), replay \(r.theirs)") }
        }
        for d in outcome.divergences.prefix(limit) { lines.append("divergence: \(d)") }
        lines.append(matches ? "the replay reproduces the run's counts exactly" : "DIVERGED: the replay does not reproduce the run")
        return lines.joined(separator: "\n")
    }
}
