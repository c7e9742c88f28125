import Foundation

/// The timed events of Core Data's SQL debug log, read from a whole log in any form ``SQLDebugLog`` reads: each
/// fetch's rows and time, each count request's time, and each save's transaction (`BEGIN EXCLUSIVE` to `COMMIT`)
/// with its row statements and, when the logging system stamped both lines, its duration. What `ambar-bench fit
/// --sqldebug` fits a profile to (Docs/calibration.md "Fitting a profile to your device's SQL debug log").
///
/// A figure no device gives (a negative time, a fetch of more than an hour or of more than a billion rows) or that
/// cannot be read is set aside with its line number and why, never taken as 0.
public struct SQLDebugTimings: Sendable, Equatable {
    /// One fetch: `total fetch execution time: <seconds>s for <rows> rows.`, and the `sql connection fetch time`
    /// before it (the SQL's share) when the log gave one.
    public struct Fetch: Sendable, Equatable {
        public var line: Int
        public var rows: Int
        public var seconds: Double
        public var connectionSeconds: Double?
    }

    /// One count request: `total count request execution time: <seconds>s for count of <count>.`
    public struct CountRequest: Sendable, Equatable {
        public var line: Int
        public var count: Int
        public var seconds: Double
    }

    /// One transaction from `BEGIN` to `COMMIT`: the app's rows its statements wrote, and its duration from the
    /// logging system's timestamps (nil when either line has none).
    public struct Transaction: Sendable, Equatable {
        public var beginLine: Int
        public var commitLine: Int
        /// INSERT, UPDATE and DELETE statements on the app's tables (one per statement).
        public var inserts = 0, updates = 0, deletes = 0
        /// Statements on Core Data's own bookkeeping tables (`Z_PRIMARYKEY`, `Z_METADATA`, `Z_MODELCACHE`).
        public var bookkeeping = 0
        public var nanoseconds: Int64?
    }

    /// A line or a transaction set aside, and why.
    public struct Note: Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public var fetches: [Fetch] = []
    public var countRequests: [CountRequest] = []
    public var transactions: [Transaction] = []
    public var setAside: [Note] = []
    /// Lines of Core Data's log (any event, known or not), and those that carried a timestamp.
    public var coreDataLines = 0
    public var timestampedLines = 0
    /// Core Data lines this reader does not know (a new OS's wording shows up here).
    public var unknownLines = 0

    /// The longest a fetch, a count request or a transaction may be said to take: an hour.
    public static let maximumSeconds = 3600.0
    /// The most rows a fetch may be said to return: a billion.
    public static let maximumRows = 1_000_000_000

    public init() {}

    /// The timed events of `text`, a whole log.
    public static func read(_ text: String) -> SQLDebugTimings {
        var timings = SQLDebugTimings()
        var connection: Double?
        var open: (transaction: Transaction, began: Int64?)?
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            guard let event = SQLDebugLog.event(line) else { continue }
            timings.coreDataLines += 1
            let stamp = SQLDebugLog.timestamp(line)
            if stamp != nil { timings.timestampedLines += 1 }
            switch event {
            case .connectionFetchTime(let seconds):
                connection = timings.accepts(seconds: seconds, what: "connection fetch time", line: number) ? seconds : nil
            case .fetchExecution(let seconds, let rows):
                defer { connection = nil }
                guard timings.accepts(seconds: seconds, what: "fetch time", line: number) else { continue }
                guard rows <= maximumRows else {
                    timings.setAside.append(Note(line: number, message: "a fetch of \(rows) rows (more than \(maximumRows)): set aside"))
                    continue
                }
                timings.fetches.append(Fetch(line: number, rows: rows, seconds: seconds, connectionSeconds: connection))
            case .countRequest(let seconds, let count):
                connection = nil
                guard timings.accepts(seconds: seconds, what: "count request time", line: number) else { continue }
                timings.countRequests.append(CountRequest(line: number, count: count, seconds: seconds))
            case .unreadable(let why):
                timings.setAside.append(Note(line: number, message: "\(why): the line cannot be read, set aside"))
            case .unknown:
                timings.unknownLines += 1
            case .statement(let kind):
                let sql = SQLDebugLog.statementText(line) ?? ""
                let word = sql.prefix(while: { $0.isLetter }).uppercased()
                if kind == "begin" {
                    if let unclosed = open {
                        timings.setAside.append(Note(line: unclosed.transaction.beginLine, message: "a transaction with no COMMIT before the next BEGIN (line \(number)): set aside"))
                    }
                    open = (Transaction(beginLine: number, commitLine: number), stamp)
                } else if word == "ROLLBACK" {
                    if let rolledBack = open {
                        timings.setAside.append(Note(line: rolledBack.transaction.beginLine, message: "a transaction rolled back (line \(number)): set aside"))
                    }
                    open = nil
                } else if kind == "commit", let begun = open {
                    open = nil
                    var transaction = begun.transaction
                    transaction.commitLine = number
                    if let began = begun.began, let stamp {
                        let nanoseconds = stamp - began
                        guard nanoseconds >= 0, Double(nanoseconds) <= maximumSeconds * 1e9 else {
                            timings.setAside.append(Note(line: transaction.beginLine, message: "a transaction whose COMMIT (line \(number)) is stamped \(Double(nanoseconds) / 1e9) s after its BEGIN: set aside"))
                            continue
                        }
                        transaction.nanoseconds = nanoseconds
                    }
                    timings.transactions.append(transaction)
                } else if var transaction = open?.transaction {
                    if ["CREATE", "ALTER", "DROP"].contains(word) {
                        timings.setAside.append(Note(line: transaction.beginLine, message: "a transaction that changes the schema (\(word) at line \(number)) sets up or migrates the store, not a save: set aside"))
                        open = nil
                        continue
                    }
                    let upper = sql.uppercased()
                    let bookkeeping = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains { upper.contains($0) }
                    switch (kind, bookkeeping) {
                    case ("insert", true), ("update", true), ("delete", true): transaction.bookkeeping += 1
                    case ("insert", false): transaction.inserts += 1
                    case ("update", false): transaction.updates += 1
                    case ("delete", false): transaction.deletes += 1
                    default: break
                    }
                    open?.transaction = transaction
                }
            case .faultFromDatabase, .ignored:
                break
            }
        }
        if let unclosed = open {
            timings.setAside.append(Note(line: unclosed.transaction.beginLine, message: "a transaction with no COMMIT before the log ends: set aside"))
        }
        return timings
    }

    /// Whether `seconds` is a time a device gives (from 0 to an hour); sets the line aside when not.
    private mutating func accepts(seconds: Double, what: String, line: Int) -> Bool {
        if seconds < 0 {
            setAside.append(Note(line: line, message: "a negative \(what) (\(seconds) s): set aside"))
            return false
        }
        if seconds > Self.maximumSeconds {
            setAside.append(Note(line: line, message: "a \(what) of \(seconds) s (more than an hour): set aside"))
            return false
        }
        return true
    }
}
