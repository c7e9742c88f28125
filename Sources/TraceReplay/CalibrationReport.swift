import Foundation

/// What a replay on Apple's Core Data measured for one record of the trace (Docs/calibration.md "What the Apple
/// side measures"): the step's time on the replaying thread, the main thread's CPU time meanwhile, what Core
/// Data's SQL debug log said, the notifications posted, and the objects registered in the replay's contexts after it.
public struct StepMeasurement: Codable, Sendable, Equatable {
    public var n: Int
    public var op: String
    public var thread: String?
    public var nanoseconds: UInt64
    public var mainThreadNanoseconds: UInt64
    public var sql: SQLLogCounts
    /// Objects-did-change and did-save notifications posted during the step (our `notificationPosted`).
    public var notifications: Int
    /// Saves that succeeded (our `contextSave`).
    public var saves: Int
    /// Objects registered in all of the replay's contexts once the step returned (a level, not a count of events).
    public var registeredObjects: Int

    public init(n: Int, op: String, thread: String?, nanoseconds: UInt64, mainThreadNanoseconds: UInt64, sql: SQLLogCounts,
                notifications: Int, saves: Int, registeredObjects: Int) {
        (self.n, self.op, self.thread, self.nanoseconds, self.mainThreadNanoseconds) = (n, op, thread, nanoseconds, mainThreadNanoseconds)
        (self.sql, self.notifications, self.saves, self.registeredObjects) = (sql, notifications, saves, registeredObjects)
    }

    /// The step's counts under our counters' names (only those the Apple side can measure).
    public var counts: [String: Int] {
        var out = sql.asCounters
        if notifications > 0 { out["notificationPosted"] = notifications }
        if saves > 0 { out["contextSave"] = saves }
        return out
    }
}

/// Turns a replay's step measurements into the diff against the traced run and the samples of the profile fit:
/// the part of the Apple side that needs no Apple framework, shared and tested here.
public enum CalibrationReport {
    /// The counters the Apple side measures; the diff compares these only (a counter Core Data cannot report
    /// would read as a difference of the whole count).
    public static let measuredCounters: Set<String> = [
        "sqlStatement", "sqlStatement[select]", "sqlStatement[insert]", "sqlStatement[update]", "sqlStatement[delete]",
        "sqlStatement[other]", "faultFulfilledFromStore", "rowFetched", "notificationPosted", "contextSave",
    ]

    /// The diff of the measured counters: the whole run and step by step (the trace's counts of each record
    /// beside the replay's).
    public static func diff(records: [OperationRecord], steps: [StepMeasurement], ours: String, theirs: String) -> CountDiff.Document {
        let restricted = records.map { r -> OperationRecord in
            var r = r
            r.counts = r.counts.map(comparable)
            return r
        }
        let replayed = steps.map { ReplayStep(n: $0.n, op: $0.op, ctx: nil, counts: $0.counts) }
        var total: [String: Int] = [:]
        for s in replayed { total.merge(s.counts, uniquingKeysWith: +) }
        let expected = comparable(records.last { $0.op == "end" }?.counts ?? [:])
        return CountDiff.Document(ours: ours, theirs: theirs, overall: CountDiff.overall(ours: expected, theirs: total),
                                  steps: CountDiff.steps(records: restricted.filter { $0.op != "end" }, replayed: replayed))
    }

    /// Our counts as the log can tell them: the measured counters only, with our rows of IDs (`idRowFetched`) in
    /// `rowFetched`, since the log's "for N rows" counts every row a fetch returned, IDs only or not.
    static func comparable(_ counts: [String: Int]) -> [String: Int] {
        var out = counts.filter { measuredCounters.contains($0.key) }
        if let ids = counts["idRowFetched"], ids > 0 { out["rowFetched", default: 0] += ids }
        return out
    }

    /// The profile fit's samples: each measured step's time (on the replaying thread) against the operations our
    /// run counted for the same record. Steps our run counted nothing for are left out.
    public static func samples(records: [OperationRecord], steps: [StepMeasurement]) -> [ProfileFit.Sample] {
        var byN: [Int: [String: Int]] = [:]
        for r in records where r.op != "end" { if let c = r.counts, !c.isEmpty { byN[r.n] = c } }
        return steps.compactMap { s in byN[s.n].map { ProfileFit.Sample(counts: $0, nanoseconds: Double(s.nanoseconds)) } }
    }

    /// One line per step: `n,op,thread,ns,mainThreadNs,statements,select,insert,update,delete,begin,commit,other,faultsFromDatabase,rowsFetched,notifications,saves,registeredObjects`.
    public static func stepsCSV(_ steps: [StepMeasurement]) -> String {
        var out = "n,op,thread,ns,mainThreadNs,statements," + SQLLogCounts.kinds.joined(separator: ",") + ",faultsFromDatabase,rowsFetched,notifications,saves,registeredObjects\n"
        for s in steps {
            var fields = [String(s.n), s.op, s.thread ?? "", String(s.nanoseconds), String(s.mainThreadNanoseconds), String(s.sql.statementCount)]
            fields += SQLLogCounts.kinds.map { String(s.sql.statements[$0, default: 0]) }
            fields += [String(s.sql.faultsFromDatabase), String(s.sql.rowsFetched), String(s.notifications), String(s.saves), String(s.registeredObjects)]
            out += fields.joined(separator: ",") + "\n"
        }
        return out
    }
}

/// Splits Core Data's SQL debug log by step: the replaying tool writes ``marker(_:)`` to the same stream after
/// each step, and everything read before a step's marker is that step's (lines other threads logged meanwhile
/// included: they ran during the step).
public struct SQLDebugStepLog: Sendable {
    private var pending = ""
    private var current = SQLLogCounts()

    public init() {}

    static let markerHead = "ambar-calibrate: step "

    /// The line the tool writes after step `n` (its own, never Core Data's).
    public static func marker(_ n: Int) -> String { "\(markerHead)\(n) ends\n" }

    /// Reads `text`; returns the steps whose marker it completed, with their counts, in order.
    public mutating func feed(_ text: String) -> [(n: Int, counts: SQLLogCounts)] {
        pending += text
        guard let lastNewline = pending.lastIndex(of: "\n") else { return [] }
        var done: [(n: Int, counts: SQLLogCounts)] = []
        for line in pending[..<lastNewline].split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix(Self.markerHead), let n = Int(line.dropFirst(Self.markerHead.count).prefix(while: { $0.isNumber })) {
                done.append((n, current))
                current = SQLLogCounts()
            } else {
                SQLDebugLog.read(line, into: &current)
            }
        }
        pending = String(pending[pending.index(after: lastNewline)...])
        return done
    }
}
