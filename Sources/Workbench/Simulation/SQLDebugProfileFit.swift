import Foundation
import ObjectGraph
import TraceReplay

/// A cost profile fitted to a device's own Core Data SQL debug log (`ambar-bench fit --sqldebug`, Docs/calibration.md
/// "Fitting a profile to your device's SQL debug log"). The log determines at most six figures:
///
/// - `fetchExecuted` and `rowFetched`, the fixed and per-row time of a fetch, by non-negative least squares over
///   the fetches' `total fetch execution time` (at least 3 fetches and two distinct row counts);
/// - `transaction`, `rowInserted`, `rowUpdated` and `rowDeleted`, from the time between each save's `BEGIN` and
///   `COMMIT` by the logging system's timestamps (inferred: the difference holds the logging too).
///
/// Count requests are a check on `fetchExecuted`, not a data point. Every other figure is the base profile's.
public struct SQLDebugProfileFit: Sendable {
    /// What the log says of one operation.
    public struct Figure: Sendable, Equatable {
        public var operation: String
        /// Nanoseconds; nil when the log does not determine it.
        public var nanoseconds: Double?
        /// The fetches or timed transactions it was fitted to (for a row figure, those with such a statement).
        public var dataPoints: Int
        /// The data points in words (`3 fetches`, `1 timed transaction`).
        public var dataPointsText: String
        /// Why the log does not determine it ("" when it does).
        public var why: String
        /// The `source` written for it in the profile (when determined).
        public var source: String
    }

    /// The fetch figures and the save figures, in the profile's order.
    public static let fetchOperations = ["fetchExecuted", "rowFetched"]
    public static let saveOperations = ["transaction", "rowInserted", "rowUpdated", "rowDeleted"]

    /// The log as the user named it.
    public var log: String
    public var timings: SQLDebugTimings
    /// One per operation of ``fetchOperations`` and ``saveOperations``, in that order.
    public var figures: [Figure]
    /// The count requests' mean time, to the nanosecond (nil without one).
    public var countRequestNanoseconds: Double?
    /// The SQL connection's share of the fetches' time (`sql connection fetch time` over `total fetch execution
    /// time`, summed over the fetches that gave both).
    public var connectionShare: Double?

    public func figure(_ operation: String) -> Figure? { figures.first { $0.operation == operation } }

    /// The figures the log determines.
    public var determined: [Figure] { figures.filter { $0.nanoseconds != nil } }

    /// Reads and fits the log at `file`, named `name` (default its path) in what is written.
    /// - Throws: `WorkbenchError` (bad input) naming the file when it cannot be read, is empty, is not text, or
    ///   has no line of Core Data's SQL debug log.
    public static func read(file: URL, name: String? = nil) throws -> SQLDebugProfileFit {
        let path = file.path
        guard let data = FileManager.default.contents(atPath: path) else {
            throw WorkbenchError(.badInput, "cannot read the SQL debug log \(path)")
        }
        guard !data.contains(0), let text = String(data: data, encoding: .utf8) else {
            throw WorkbenchError(.badInput, "\(path) is not a text log (binary, or not UTF-8): give the console output of an app run with -com.apple.CoreData.SQLDebug 1")
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw WorkbenchError(.badInput, "\(path) is empty: give the console output of an app run with -com.apple.CoreData.SQLDebug 1")
        }
        let timings = SQLDebugTimings.read(text)
        guard timings.coreDataLines > 0 else {
            throw WorkbenchError(.badInput, "\(path): no line of Core Data's SQL debug log (`CoreData: sql: …`, `CoreData: annotation: …`); run the app with the launch argument -com.apple.CoreData.SQLDebug 1 and save its console output (Docs/calibration.md \"Fitting a profile to your device's SQL debug log\")")
        }
        return fit(timings, log: name ?? path)
    }

    /// Fits the figures to `timings`, read from the log named `log`.
    public static func fit(_ timings: SQLDebugTimings, log: String) -> SQLDebugProfileFit {
        let counts = timings.countRequests.map { $0.seconds * 1e9 }
        let connected = timings.fetches.filter { $0.connectionSeconds != nil }
        let connectedTotal = connected.reduce(0.0) { $0 + $1.seconds }
        var result = SQLDebugProfileFit(
            log: log, timings: timings, figures: [],
            countRequestNanoseconds: counts.isEmpty ? nil : (counts.reduce(0, +) / Double(counts.count)).rounded(),
            connectionShare: connectedTotal > 0 ? connected.reduce(0.0) { $0 + ($1.connectionSeconds ?? 0) } / connectedTotal : nil)
        result.figures = result.fetchFigures() + result.saveFigures()
        return result
    }

    private func fetchFigures() -> [Figure] {
        let fetches = timings.fetches
        func undetermined(_ why: String) -> [Figure] {
            Self.fetchOperations.map { Figure(operation: $0, nanoseconds: nil, dataPoints: fetches.count, dataPointsText: plural(fetches.count, "fetch", "fetches"), why: why, source: "") }
        }
        let rowCounts = Set(fetches.map(\.rows))
        if fetches.isEmpty { return undetermined("no fetch in the log (no `total fetch execution time` line)") }
        if fetches.count < 3 { return undetermined("only \(plural(fetches.count, "fetch", "fetches")) in the log (at least 3 needed)") }
        if rowCounts.count < 2 {
            let mean = fetches.reduce(0.0) { $0 + $1.seconds * 1e9 } / Double(fetches.count)
            return undetermined("every fetch returned \(fetches[0].rows) rows: only the time of such a fetch is known (\(Self.grouped(mean)) ns on average), not its fixed and per-row parts")
        }
        let samples = fetches.map { ProfileFit.Sample(counts: ["fetchExecuted": 1, "rowFetched": $0.rows], nanoseconds: $0.seconds * 1e9) }
        let fit = ProfileFit.fit(samples, operations: Self.fetchOperations, minimumSteps: 1, step: "fetch")
        var how = "\(rowCounts.min()!) to \(rowCounts.max()!) rows; non-negative least squares, relative residual \(String(format: "%.3f", fit.relativeResidual))"
        how += "; from `total fetch execution time`, the whole fetch"
        if let share = connectionShare { how += ", of which the SQL connection's `sql connection fetch time` is \(Int((share * 100).rounded()))%" }
        let head = "fitted to \(plural(fetches.count, "fetch", "fetches")) in \(log) (\(how))"
        var meanings = [
            "fetchExecuted": "the fixed time of a fetch; the SELECT's own cost is folded into it (sqlStatement keeps the base profile's figure, so a simulated fetch also pays that)",
            "rowFetched": "the time per row a fetch returned (stepped, decoded, and whatever Core Data does per row inside the fetch's time)",
        ]
        if let countMean = countRequestNanoseconds, case .fitted(let ns, _)? = fit.figures["fetchExecuted"], ns > 0 {
            meanings["fetchExecuted"]! += "; \(plural(timings.countRequests.count, "count request", "count requests")) took \(Self.grouped(countMean)) ns on average, \(String(format: "%.2f", countMean / ns))× this figure (a check: a count request is a fetch with no row, plus SQLite's counting)"
        }
        return Self.fetchOperations.map { op in
            figure(op, fit.figures[op], seen: fetches.count, unit: ("fetch", "fetches"), head: head, meaning: meanings[op]!)
        }
    }

    private func saveFigures() -> [Figure] {
        let timed = timings.transactions.filter { $0.nanoseconds != nil }
        func undetermined(_ why: String) -> [Figure] {
            Self.saveOperations.map { Figure(operation: $0, nanoseconds: nil, dataPoints: timed.count, dataPointsText: plural(timed.count, "timed transaction", "timed transactions"), why: why, source: "") }
        }
        if timings.transactions.isEmpty { return undetermined("no save in the log (no BEGIN … COMMIT)") }
        if timed.isEmpty {
            return undetermined(timings.timestampedLines == 0
                ? "the log's lines carry no timestamps: a save's time is read from the logging system's timestamps on its BEGIN and COMMIT (capture the Xcode console or `log stream` with their prefix)"
                : "no transaction has a timestamp on both its BEGIN and its COMMIT")
        }
        let samples = timed.map {
            ProfileFit.Sample(counts: ["transaction": 1, "rowInserted": $0.inserts, "rowUpdated": $0.updates, "rowDeleted": $0.deletes],
                              nanoseconds: Double($0.nanoseconds!))
        }
        let fit = ProfileFit.fit(samples, operations: Self.saveOperations, minimumSteps: 3, step: "timed transaction")
        let how = "BEGIN to COMMIT by the logging system's timestamps; non-negative least squares, relative residual \(String(format: "%.3f", fit.relativeResidual))"
        let head = "fitted to \(plural(timed.count, "transaction", "transactions")) in \(log) (\(how))"
        let inferred = "INFERRED: a timestamp difference also holds the logging itself and whatever else the thread did, and whether COMMIT is logged before or after SQLite commits is not known"
        let meanings = [
            "transaction": "a save's fixed time in SQLite, its BEGIN, COMMIT and Core Data's key bookkeeping statements folded in",
            "rowInserted": "one INSERT statement of a save, its sqlStatement share folded in",
            "rowUpdated": "one UPDATE statement of a save, its sqlStatement share folded in",
            "rowDeleted": "one DELETE statement of a save (however many rows it names), its sqlStatement share folded in",
        ]
        return Self.saveOperations.map { op in
            let seen = samples.filter { $0.counts[op, default: 0] > 0 }.count
            return figure(op, fit.figures[op], seen: seen, unit: ("timed transaction", "timed transactions"), head: head, meaning: "\(meanings[op]!). \(inferred)")
        }
    }

    private func figure(_ op: String, _ fitted: ProfileFit.Figure?, seen: Int, unit: (one: String, many: String), head: String, meaning: String) -> Figure {
        switch fitted {
        case .fitted(let ns, let points)?:
            guard ns <= CostProfile.maximumNanos else {
                return Figure(operation: op, nanoseconds: nil, dataPoints: points, dataPointsText: plural(points, unit.one, unit.many),
                              why: "fitted to \(Self.grouped(ns)) ns, above a profile's limit of one second", source: "")
            }
            let held = ns == 0 ? " (held at 0 by the non-negative fit: the times do not grow with it)" : ""
            return Figure(operation: op, nanoseconds: ns, dataPoints: points, dataPointsText: plural(points, unit.one, unit.many), why: "", source: "\(head): \(meaning)\(held)")
        case .undetermined(let why)?:
            return Figure(operation: op, nanoseconds: nil, dataPoints: seen, dataPointsText: plural(seen, unit.one, unit.many), why: why, source: "")
        case nil:
            return Figure(operation: op, nanoseconds: nil, dataPoints: seen, dataPointsText: plural(seen, unit.one, unit.many), why: "not fitted", source: "")
        }
    }

    /// What the log holds, in words: "3 fetches, 2 count requests and 8 transactions".
    public var holdings: String {
        "\(plural(timings.fetches.count, "fetch", "fetches")), \(plural(timings.countRequests.count, "count request", "count requests")) and \(plural(timings.transactions.count, "transaction", "transactions"))"
    }

    /// The profile file: the determined figures `estimated: false` with what they were fitted to, every other
    /// operation the figure of `base`, marked `estimated: true` and sourced to it (Profiles/README.md "Writing a
    /// profile"). `command` is the command line that wrote it.
    public func yaml(base: CostProfile, device: String, command: String) -> String {
        let timed = timings.transactions.filter { $0.nanoseconds != nil }.count
        var text = "# Cost profile written by `\(ProfileText.oneLine(command))` from the Core Data SQL debug log \(ProfileText.oneLine(log))\n"
        text += "# captured on \(ProfileText.oneLine(device)): \(holdings) (\(timed) timed), \(plural(timings.setAside.count, "line", "lines")) set aside.\n"
        text += "# Determined by the log (estimated: false): \(determined.map(\.operation).joined(separator: ", ")).\n"
        text += "# Every other figure is \(base.name)'s (estimated: true).\n"
        let undetermined = figures.filter { $0.nanoseconds == nil }
        if !undetermined.isEmpty { text += "# The log did not determine:\n" }
        for f in undetermined { text += "#   \(f.operation): \(ProfileText.oneLine(f.why))\n" }
        text += "# Docs/calibration.md \"Fitting a profile to your device's SQL debug log\".\n"
        text += "description: \(ProfileText.quoted("Core Data on \(device): fetch and save costs fitted to its SQL debug log \(log) (\(holdings)) by ambar-bench fit --sqldebug; every other figure is \(base.name)'s."))\n"
        text += "device: \(ProfileText.quoted(device))\n"
        text += "writtenBy: \(ProfileText.quoted(command))\n"
        text += "fittedTo: \(ProfileText.quoted("\(holdings) (\(timed) timed) in the Core Data SQL debug log \(log), captured on \(device)"))\n"
        text += "costs:\n"
        for op in CostedOperation.allCases {
            let line: String
            if let f = figure(op.name), let ns = f.nanoseconds {
                line = "{ ns: \(Int(ns.rounded())), estimated: false, source: \(ProfileText.quoted(f.source)) }"
            } else {
                let attempted = figure(op.name).map { " (\($0.why))" } ?? ""
                let baseSource = base.sources[op.name].map { ": \($0)" } ?? ""
                line = "{ ns: \(base.cost(op)), estimated: true, source: \(ProfileText.quoted("not determined by the log\(attempted): \(base.name)'s figure\(baseSource)")) }"
            }
            text += "  \(op.name): \(line)\n"
        }
        return text
    }

    /// The summary table `ambar-bench fit --sqldebug` prints: figure, nanoseconds, determined or not and why,
    /// data points.
    public func summary(base: CostProfile) -> String {
        var text = "\(log): \(holdings) (\(timings.transactions.filter { $0.nanoseconds != nil }.count) timed); \(plural(timings.setAside.count, "line", "lines")) set aside\n"
        var rows = [["figure", "ns", "determined", "data points"]]
        var notes: [String] = []
        for f in figures {
            let ns = f.nanoseconds.map { String(Int($0.rounded())) } ?? "\(base.cost(CostedOperation(name: f.operation)!)) (\(base.name))"
            rows.append([f.operation, ns, f.nanoseconds == nil ? "no" : "yes", f.dataPointsText])
            if f.nanoseconds == nil { notes.append("\(f.operation) not determined: \(f.why)") }
        }
        let widths = (0..<4).map { c in rows.map { $0[c].count }.max()! }
        for row in rows {
            text += row.enumerated().map { c, cell in c == 1 ? cell.leftPadded(widths[c]) : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }
        if let share = connectionShare { text += "the SQL connection's share of the fetches' time: \(Int((share * 100).rounded()))%\n" }
        if let count = countRequestNanoseconds { text += "count requests: \(Self.grouped(count)) ns on average over \(timings.countRequests.count) (a check on fetchExecuted)\n" }
        for note in notes { text += note + "\n" }
        return text
    }

    /// Writes the profile to `url` (its folder made if needed) and reads it back with ``CostProfile/load(file:)``;
    /// nothing is written when the log determines no figure, when the file exists and `overwrite` is false, or
    /// when what was written does not load.
    @discardableResult
    public func write(to url: URL, base: CostProfile, device: String, command: String, overwrite: Bool) throws -> CostProfile {
        guard !determined.isEmpty else {
            let reasons = figures.map { "\($0.operation): \($0.why)" }.joined(separator: "; ")
            throw WorkbenchError(.badInput, "\(log): the log determines no figure (\(reasons)); no profile written")
        }
        let manager = FileManager.default
        if manager.fileExists(atPath: url.path), !overwrite {
            throw WorkbenchError(.badInput, "\(url.path) already exists: not replaced without --force")
        }
        let folder = url.deletingLastPathComponent()
        try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        defer { try? manager.removeItem(at: temporary) }
        try Data(yaml(base: base, device: device, command: command).utf8).write(to: temporary)
        let profile: CostProfile
        do { profile = try CostProfile.load(file: temporary) } catch {
            throw WorkbenchError(.internalFailure, "the profile written for \(url.path) does not load: \(error)")
        }
        if manager.fileExists(atPath: url.path) { try manager.removeItem(at: url) }
        try manager.moveItem(at: temporary, to: url)
        var named = profile
        named.name = url.deletingPathExtension().lastPathComponent
        return named
    }

    /// A file name for a device: `Ana's iPhone 15 Pro` → `ana-s-iphone-15-pro`; nil when it has no letter or digit.
    public static func slug(_ device: String) -> String? {
        var out = ""
        for c in device.lowercased() {
            if c.isASCII && (c.isLetter || c.isNumber) { out.append(c) } else if !out.isEmpty && out.last != "-" { out.append("-") }
        }
        while out.last == "-" { out.removeLast() }
        return out.isEmpty ? nil : out
    }

    /// `1500000` as `1,500,000`.
    static func grouped(_ value: Double) -> String {
        let digits = String(Int(value.rounded()))
        var out = ""
        for (i, c) in digits.reversed().enumerated() {
            if i > 0 && i % 3 == 0 && c != "-" { out.append(",") }
            out.append(c)
        }
        return String(out.reversed())
    }
}

private func plural(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }

extension String {
    /// The text right-aligned in `width` columns (tables printed to the terminal).
    public func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
