import Foundation

/// A count of the traced run beside the same count of a replay (ObjectGraph's, or Apple's Core Data's): per step
/// (a record of the trace) or over the whole run (Docs/calibration.md "The diff").
public struct CountDiffRow: Codable, Sendable, Equatable {
    /// The record's `n`; nil for the whole run.
    public var n: Int?
    public var op: String?
    public var thread: String?
    public var counter: String
    /// The traced run's count (ours).
    public var ours: Int
    /// The replay's count.
    public var theirs: Int
    public var difference: Int { theirs - ours }

    public init(n: Int?, op: String?, thread: String?, counter: String, ours: Int, theirs: Int) {
        (self.n, self.op, self.thread, self.counter, self.ours, self.theirs) = (n, op, thread, counter, ours, theirs)
    }
}

/// Builds and writes count diffs: rows in a stable order (steps by record, counters by name), as CSV and JSON.
public enum CountDiff {
    /// One row per counter either side has, for the whole run.
    public static func overall(ours: [String: Int], theirs: [String: Int]) -> [CountDiffRow] {
        Set(ours.keys).union(theirs.keys).sorted().map { CountDiffRow(n: nil, op: nil, thread: nil, counter: $0, ours: ours[$0] ?? 0, theirs: theirs[$0] ?? 0) }
    }

    /// One row per record and counter either side has: the trace's own counts of each call (ours) beside the
    /// replay's step of the same record (`theirs`, by `n`).
    public static func steps(records: [OperationRecord], replayed: [ReplayStep]) -> [CountDiffRow] {
        var theirs: [Int: [String: Int]] = [:]
        for step in replayed { theirs[step.n, default: [:]].merge(step.counts, uniquingKeysWith: +) }
        var rows: [CountDiffRow] = []
        for r in records where r.op != "end" {
            let mine = r.counts ?? [:], other = theirs[r.n] ?? [:]
            for counter in Set(mine.keys).union(other.keys).sorted() {
                rows.append(CountDiffRow(n: r.n, op: r.op, thread: r.thread, counter: counter, ours: mine[counter] ?? 0, theirs: other[counter] ?? 0))
            }
        }
        return rows
    }

    /// `n,op,thread,counter,ours,theirs,difference` with a header line (the whole run's rows have no n, op or
    /// thread).
    public static func csv(_ rows: [CountDiffRow]) -> String {
        func field(_ s: String?) -> String {
            guard let s else { return "" }
            return s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
        }
        var out = "n,op,thread,counter,ours,theirs,difference\n"
        for r in rows {
            out += [r.n.map(String.init), r.op, r.thread, r.counter, String(r.ours), String(r.theirs), String(r.difference)].map(field).joined(separator: ",") + "\n"
        }
        return out
    }

    /// The diff as JSON: `{"ours": "...", "theirs": "...", "overall": [...], "steps": [...]}`, keys sorted.
    public struct Document: Codable, Sendable, Equatable {
        /// What each side is ("ObjectGraph simulated run", "Core Data, macOS 15.1, MacBookPro18,3").
        public var ours: String
        public var theirs: String
        public var overall: [CountDiffRow]
        public var steps: [CountDiffRow]
        public init(ours: String, theirs: String, overall: [CountDiffRow], steps: [CountDiffRow]) {
            (self.ours, self.theirs, self.overall, self.steps) = (ours, theirs, overall, steps)
        }
    }

    public static func json(_ document: Document) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(document)) ?? Data()
    }
}

extension TraceCoding {
    /// A whole trace as its file's bytes: the header line, then one line per record.
    public static func file(header: TraceHeader, records: [OperationRecord]) -> Data {
        lines([header]) + lines(records)
    }
}
