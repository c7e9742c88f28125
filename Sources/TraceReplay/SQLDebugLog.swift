import Foundation

/// What Core Data's SQL debug log (`-com.apple.CoreData.SQLDebug 1`, or the user default
/// `com.apple.CoreData.SQLDebug` = 1) says it did, counted: statements by kind, faults fulfilled from the database,
/// rows fetched. The format is not documented by Apple; what this reader knows of it comes from log excerpts
/// published by others (Docs/calibration.md "The SQL debug log", confidence: second-hand):
///
///     CoreData: sql: SELECT 0, t0.Z_PK, t0.Z_OPT, t0.ZAGE FROM ZPERSON t0 WHERE t0.ZAGE > ?
///     CoreData: annotation: sql connection fetch time: 0.0255s
///     CoreData: annotation: total fetch execution time: 0.0279s for 1066 rows.
///     CoreData: sql: BEGIN EXCLUSIVE
///     CoreData: sql: INSERT INTO ZBUDGETCATEGORY(Z_PK, Z_ENT, Z_OPT, ZAMOUNT, ZTITLE) VALUES(?, ?, ?, ?, ?)
///     CoreData: sql: COMMIT
///     CoreData: annotation: fault fulfilled from database for : 0xd000000000100002 <x-coredata://…/Country/p4>
///
/// A line may carry a prefix of the logging system before `CoreData:` (a timestamp, the process); some published
/// excerpts drop `CoreData:` altogether (`sql: COMMIT`): both are read. A statement that wraps (an INSERT's
/// `VALUES(...)` on the next line) counts once; its continuation lines are ignored.
public struct SQLLogCounts: Codable, Sendable, Equatable {
    /// Statements by kind: select, insert, update, delete, begin, commit, other (pragmas, ROLLBACK, schema).
    public var statements: [String: Int] = [:]
    /// `fault fulfilled from database` annotations.
    public var faultsFromDatabase = 0
    /// Rows of fetches (`total fetch execution time: …s for N rows.`).
    public var rowsFetched = 0
    /// Fetches that reported their time (one per `total fetch execution time` line), and their seconds summed.
    public var fetches = 0
    public var fetchSeconds = 0.0
    /// Lines that named Core Data but that this reader does not know (kept so a new OS's format shows up).
    public var unknownLines = 0

    public init() {}

    /// The statement kinds, in report order.
    public static let kinds = ["select", "insert", "update", "delete", "begin", "commit", "other"]

    public var statementCount: Int { statements.values.reduce(0, +) }

    /// The counts under the names of our run's counters (Docs/calibration.md "What the replay must reproduce"):
    /// `sqlStatement`, `sqlStatement[select|insert|update|delete|other]` (BEGIN and COMMIT are `other`, as our
    /// store counts them), `faultFulfilledFromStore`, `rowFetched`. Only what the log can tell: nothing for a
    /// counter it has no line for.
    public var asCounters: [String: Int] {
        var out: [String: Int] = [:]
        let total = statementCount
        if total > 0 { out["sqlStatement"] = total }
        for kind in ["select", "insert", "update", "delete"] where statements[kind, default: 0] > 0 {
            out["sqlStatement[\(kind)]"] = statements[kind]
        }
        let other = statements["begin", default: 0] + statements["commit", default: 0] + statements["other", default: 0]
        if other > 0 { out["sqlStatement[other]"] = other }
        if faultsFromDatabase > 0 { out["faultFulfilledFromStore"] = faultsFromDatabase }
        if rowsFetched > 0 { out["rowFetched"] = rowsFetched }
        return out
    }

    public static func += (a: inout SQLLogCounts, b: SQLLogCounts) {
        a.statements.merge(b.statements, uniquingKeysWith: +)
        a.faultsFromDatabase += b.faultsFromDatabase
        a.rowsFetched += b.rowsFetched
        a.fetches += b.fetches
        a.fetchSeconds += b.fetchSeconds
        a.unknownLines += b.unknownLines
    }
}

/// Reads Core Data's SQL debug log as it comes (a pipe read in pieces): ``feed(_:)`` the text, ``drain()`` the
/// counts of the complete lines so far (a line cut by the piece boundary waits for its end).
public struct SQLDebugLog: Sendable {
    private var pending = ""
    private var counts = SQLLogCounts()

    public init() {}

    /// The counts of a whole log.
    public static func count(_ text: String) -> SQLLogCounts {
        var log = SQLDebugLog()
        log.feed(text)
        log.finish()
        return log.drain()
    }

    public mutating func feed(_ text: String) {
        pending += text
        guard let lastNewline = pending.lastIndex(of: "\n") else { return }
        let complete = pending[..<lastNewline]
        for line in complete.split(separator: "\n", omittingEmptySubsequences: true) { Self.read(line, into: &counts) }
        pending = String(pending[pending.index(after: lastNewline)...])
    }

    /// The last line has ended (the log is closed).
    public mutating func finish() {
        if !pending.isEmpty { Self.read(pending[...], into: &counts) }
        pending = ""
    }

    /// The counts since the last drain.
    public mutating func drain() -> SQLLogCounts {
        defer { counts = SQLLogCounts() }
        return counts
    }

    /// One line's event.
    public enum Event: Equatable, Sendable {
        case statement(String)
        case connectionFetchTime(Double)
        case fetchExecution(seconds: Double, rows: Int)
        case faultFromDatabase
        /// Another annotation this reader knows and does not count (`sql execution time`, `Disconnecting …`, binds).
        case ignored
        case unknown
    }

    /// What one line says; nil for a line that is not Core Data's (another subsystem's, a wrapped statement's tail).
    public static func event(_ line: Substring) -> Event? {
        var body = line[...]
        if let marker = body.range(of: "CoreData: ") {
            body = body[marker.upperBound...]
        }
        let trimmed = body.drop(while: { $0 == " " || $0 == "\t" })
        if let rest = trimmed.removingPrefix("sql: ") { return .statement(kind(rest)) }
        if let rest = trimmed.removingPrefix("annotation: ") ?? trimmed.removingPrefix("error: ") { return annotation(rest) }
        if trimmed.hasPrefix("details: ") || trimmed.hasPrefix("warning: ") { return .ignored }
        return line.contains("CoreData: ") ? .unknown : nil
    }

    /// A statement's kind by its first word: select, insert, update, delete, begin, commit, or other.
    public static func kind(_ sql: Substring) -> String {
        let word = sql.drop(while: { $0 == " " }).prefix(while: { $0.isLetter }).uppercased()
        switch word {
        case "SELECT": return "select"
        case "INSERT", "REPLACE": return "insert"
        case "UPDATE": return "update"
        case "DELETE": return "delete"
        case "BEGIN": return "begin"
        case "COMMIT", "END": return "commit"
        default: return "other"
        }
    }

    private static func annotation(_ text: Substring) -> Event {
        if text.hasPrefix("fault fulfilled from database") { return .faultFromDatabase }
        if let rest = text.removingPrefix("sql connection fetch time: ") { return .connectionFetchTime(seconds(rest) ?? 0) }
        if let rest = text.removingPrefix("total fetch execution time: ") {
            // `0.0279s for 1066 rows.`
            let secs = seconds(rest) ?? 0
            var rows = 0
            if let forRange = rest.range(of: " for ") {
                rows = Int(rest[forRange.upperBound...].prefix(while: { $0.isNumber })) ?? 0
            }
            return .fetchExecution(seconds: secs, rows: rows)
        }
        return .ignored
    }

    /// `0.0012s` (an optional trailing period and text after it) as seconds.
    private static func seconds(_ text: Substring) -> Double? {
        Double(text.prefix(while: { $0.isNumber || $0 == "." || $0 == "e" || $0 == "-" }))
    }

    static func read(_ line: Substring, into counts: inout SQLLogCounts) {
        switch event(line) {
        case .statement(let kind)?: counts.statements[kind, default: 0] += 1
        case .fetchExecution(let secs, let rows)?:
            counts.fetches += 1
            counts.fetchSeconds += secs
            counts.rowsFetched += rows
        case .faultFromDatabase?: counts.faultsFromDatabase += 1
        case .unknown?: counts.unknownLines += 1
        case .connectionFetchTime?, .ignored?, nil: break
        }
    }
}

extension Substring {
    fileprivate func removingPrefix(_ prefix: String) -> Substring? {
        hasPrefix(prefix) ? self[index(startIndex, offsetBy: prefix.count)...] : nil
    }
}
