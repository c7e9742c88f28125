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
/// excerpts drop `CoreData:` altogether (`sql: COMMIT`); the unified log writes `… (CoreData)
/// [com.apple.coredata:sql] COMMIT`; a terminal may colour any of them: all are read (``SQLDebugLog/message(_:)``).
/// A statement that wraps (an INSERT's `VALUES(...)` on the next line) counts once; its continuation lines are
/// ignored.
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
        /// `total count request execution time: 0.0012s for count of 42.`: a count request's time and its count.
        case countRequest(seconds: Double, count: Int)
        case faultFromDatabase
        /// An annotation this reader knows whose figure it cannot read (a time that is not a finite number, a row
        /// count too large to hold), and why: never read as 0.
        case unreadable(String)
        /// Another annotation this reader knows and does not count (`sql execution time`, `Disconnecting …`, binds).
        case ignored
        case unknown
    }

    /// What one line says; nil for a line that is not Core Data's (another subsystem's, a wrapped statement's tail).
    public static func event(_ line: Substring) -> Event? {
        guard let message = message(line) else { return nil }
        switch message.head {
        case "sql": return annotationEvent(message.text) ?? .statement(kind(message.text))
        case "annotation", "error": return annotationEvent(message.text) ?? .ignored
        case "details", "warning": return .ignored
        default: return .unknown
        }
    }

    /// The SQL of a statement line (`CoreData: sql: <statement>` in any form), without its prefix and escapes.
    public static func statementText(_ line: Substring) -> Substring? {
        guard let message = message(line), message.head == "sql", annotationEvent(message.text) == nil else { return nil }
        return message.text
    }

    /// A Core Data line's head (`sql`, `annotation`, `details`, …, or `""` for a head this reader does not know)
    /// and the text after it. Read in three forms (Docs/calibration.md "Fitting a profile to your device's SQL debug
    /// log"): `CoreData: <head>: <text>` after any prefix of the logging system (Xcode's console puts a timestamp
    /// and `App[pid:tid]` before it); `<head>: <text>` alone (published excerpts that drop `CoreData: `); and the
    /// unified log's `… App: (CoreData) [com.apple.coredata:<category>] <text>`, where the category is the head
    /// unless the text carries its own. Terminal colour escapes are removed first.
    static func message(_ raw: Substring) -> (head: String, text: Substring)? {
        let line = raw.contains("\u{1B}") ? Substring(withoutEscapes(raw)) : raw
        if let bracket = line.range(of: "[com.apple.coredata:") {
            let rest = line[bracket.upperBound...]
            if let close = rest.firstIndex(of: "]") {
                let text = trimmed(rest[rest.index(after: close)...])
                if let own = headed(text.removingPrefix("CoreData: ") ?? text) { return own }
                return (String(rest[..<close]), text)
            }
        }
        if let marker = line.range(of: "CoreData: ") {
            return headed(trimmed(line[marker.upperBound...])) ?? ("", line[marker.upperBound...])
        }
        return headed(trimmed(line))
    }

    private static let heads = ["sql", "annotation", "error", "details", "warning"]

    private static func headed(_ text: Substring) -> (head: String, text: Substring)? {
        for head in heads {
            if let rest = text.removingPrefix(head + ": ") { return (head, trimmed(rest)) }
        }
        return nil
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var t = text.drop(while: { $0 == " " || $0 == "\t" })
        while let last = t.last, last == " " || last == "\t" || last == "\r" { t = t.dropLast() }
        return t
    }

    /// `line` without terminal escapes: SGR colour codes (`ESC [ 31 m`, `ESC [ 0 m`) and any other CSI sequence
    /// (`ESC [`, parameter bytes, intermediate bytes, one final byte), and a lone ESC.
    public static func withoutEscapes(_ line: Substring) -> String {
        var out = String.UnicodeScalarView()
        var scalars = line.unicodeScalars[...]
        while let c = scalars.first {
            scalars = scalars.dropFirst()
            guard c == "\u{1B}" else { out.append(c); continue }
            guard scalars.first == "[" else { continue }
            scalars = scalars.dropFirst()
            scalars = scalars.drop(while: { (0x20...0x3F).contains($0.value) })
            if let final = scalars.first, (0x40...0x7E).contains(final.value) { scalars = scalars.dropFirst() }
        }
        return String(out)
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

    /// The event of an annotation's text, or nil when the text is none this reader knows with a figure. An
    /// annotation's wording never starts like a statement, so the unified log's `sql` category may hold both.
    private static func annotationEvent(_ text: Substring) -> Event? {
        if text.hasPrefix("fault fulfilled from database") { return .faultFromDatabase }
        if let rest = text.removingPrefix("sql connection fetch time: ") {
            guard let secs = seconds(rest) else { return .unreadable("a connection fetch time that is not a number of seconds") }
            return .connectionFetchTime(secs)
        }
        if let rest = text.removingPrefix("total fetch execution time: ") {
            // `0.0279s for 1066 rows.`
            guard let secs = seconds(rest) else { return .unreadable("a fetch time that is not a number of seconds") }
            guard let rows = number(after: " for ", in: rest) else { return .unreadable("a fetch's row count that cannot be read") }
            return .fetchExecution(seconds: secs, rows: rows)
        }
        if let rest = text.removingPrefix("total count request execution time: ") {
            // `0.0012s for count of 42.`
            guard let secs = seconds(rest) else { return .unreadable("a count request's time that is not a number of seconds") }
            guard let count = number(after: " for count of ", in: rest) else { return .unreadable("a count request's count that cannot be read") }
            return .countRequest(seconds: secs, count: count)
        }
        if text.hasPrefix("sql execution time: ") || text.hasPrefix("Disconnecting") || text.hasPrefix("Connecting") { return .ignored }
        return nil
    }

    /// `0.0012s` (an optional trailing period and text after it) as seconds; nil unless a finite number.
    private static func seconds(_ text: Substring) -> Double? {
        let figure = text.prefix(while: { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "-" || $0 == "+") })
        guard figure.first.map({ $0.isNumber || $0 == "-" || $0 == "." }) == true, let value = Double(figure), value.isFinite else { return nil }
        return value
    }

    /// The whole number after `marker` in `text`; nil when there is none or it does not fit an `Int`.
    private static func number(after marker: String, in text: Substring) -> Int? {
        guard let range = text.range(of: marker) else { return nil }
        let digits = text[range.upperBound...].prefix(while: { $0.isASCII && $0.isNumber })
        return digits.isEmpty ? nil : Int(digits)
    }

    static func read(_ line: Substring, into counts: inout SQLLogCounts) {
        switch event(line) {
        case .statement(let kind)?: counts.statements[kind, default: 0] += 1
        case .fetchExecution(let secs, let rows)?:
            counts.fetches += 1
            counts.fetchSeconds += secs
            counts.rowsFetched += rows
        case .faultFromDatabase?: counts.faultsFromDatabase += 1
        case .unknown?, .unreadable?: counts.unknownLines += 1
        case .connectionFetchTime?, .countRequest?, .ignored?, nil: break
        }
    }
}

extension Substring {
    fileprivate func removingPrefix(_ prefix: String) -> Substring? {
        hasPrefix(prefix) ? self[index(startIndex, offsetBy: prefix.count)...] : nil
    }
}
