import CSV
import Foundation

/// CSV text through CSV.swift (quoting and escaping are the library's).
enum CSVOutput {
    static func text(header: [String], rows: [[String]]) throws -> String {
        let stream = OutputStream(toMemory: ())
        let writer = try CSVWriter(stream: stream)
        try writer.write(row: header)
        for row in rows { try writer.write(row: row) }
        writer.stream.close()
        guard let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else { return "" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func number(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(format: "%.3f", v)
    }

    /// metrics.csv: long format, one row per (scenario, variant, repetition, metric, statistic, label).
    static func metrics(_ results: [VariantResult]) throws -> String {
        var rows: [[String]] = []
        for r in results {
            for m in r.metrics {
                rows.append([r.scenario, r.variant, String(r.repetition), m.metric, m.statistic, m.label, number(m.value), m.unit])
            }
            // Host figures (memory, CPU, wall time) carry the label `host`: never exact, skipped by the gate.
            for m in r.host {
                let label = m.label.isEmpty ? "host" : "host:\(m.label)"
                rows.append([r.scenario, r.variant, String(r.repetition), m.metric, m.statistic, label, number(m.value), m.unit])
            }
        }
        return try text(header: ["scenario", "variant", "repetition", "metric", "statistic", "label", "value", "unit"], rows: rows)
    }

    /// repeats.csv: every exact metric of every variant over its repetitions (seeds): n, median, min, max.
    static func repeats(_ results: [VariantResult]) throws -> String {
        let rows = RepeatSummary.make(results).flatMap { v in
            v.metrics.map { m in [v.scenario, v.variant, m.metric, m.statistic, m.label, String(m.values.count), number(m.median), number(m.min), number(m.max), m.unit] }
        }
        return try text(header: ["scenario", "variant", "metric", "statistic", "label", "n", "median", "min", "max", "unit"], rows: rows)
    }

    /// The columns of summary.csv, one row per variant, and of the report's table.
    static let summaryColumns: [(String, @Sendable (VariantResult) -> String)] = [
        ("scenario", { $0.scenario }),
        ("variant", { $0.variant }),
        ("repetition", { String($0.repetition) }),
        ("topology", { $0.topology }),
        ("viewPolicy", { $0.policies["view"] ?? "" }),
        ("verdict", { $0.oracle.verdict.rawValue }),
        ("mergeLatency.count", { v($0, "mergeLatency", "count") }),
        ("mergeLatency.p50", { v($0, "mergeLatency", "p50") }),
        ("mergeLatency.p99", { v($0, "mergeLatency", "p99") }),
        ("mergeLatency.max", { v($0, "mergeLatency", "max") }),
        ("mainBusy.p99", { v($0, "mainBusy", "p99") }),
        ("hitchRatio", { v($0, "hitchRatio", "value", "60Hz") }),
        ("hangs", { v($0, "hangs", "count") }),
        ("longTasks", { v($0, "longTasks", "count") }),
        ("conflicts", { number($0.metrics.filter { $0.metric == "conflicts" && $0.label.hasPrefix("layer:") }.reduce(0) { $0 + $1.value }) }),
        ("saveFailures", { v($0, "saveFailures", "count") }),
        ("lostUpdates", { String($0.oracle.lostUpdates) }),
        ("promisedLosses", { String($0.oracle.promisedLosses) }),
        ("refusedChanges", { v($0, "refusedChanges", "count") }),
        ("staleReads", { String($0.oracle.staleReads) }),
        ("readOnlySavesReachedStore", { String($0.oracle.readOnlySavesReachedStore) }),
        ("importThroughput", { v($0, "importThroughput", "value") }),
        ("memoryAllocated.peak", { v($0, "memoryAllocated", "peak") }),
        ("rowsInserted", { String($0.counters["rowsInserted"] ?? 0) }),
        ("rowsUpdated", { String($0.counters["rowsUpdated"] ?? 0) }),
        ("wallSeconds", { String(format: "%.2f", $0.wallSeconds) }),
        // `partial`: stopped before its end (Ctrl-C); its figures cover the part that ran.
        ("status", { $0.partial == nil ? "complete" : "partial" }),
    ]

    private static func v(_ r: VariantResult, _ metric: String, _ statistic: String, _ label: String = "") -> String {
        r.value(metric, statistic, label: label).map(number) ?? ""
    }

    static func summary(_ results: [VariantResult]) throws -> String {
        try text(header: summaryColumns.map(\.0), rows: results.map { r in summaryColumns.map { $0.1(r) } })
    }

    static func timeseries(_ results: [VariantResult]) throws -> String {
        var rows: [[String]] = []
        for r in results {
            for s in r.timeseries {
                rows.append([r.scenario, r.variant, String(r.repetition), String(format: "%.3f", s.seconds), s.phase,
                             s.allocated.map(String.init) ?? "", s.resident.map(String.init) ?? "", String(s.mainQueueDepth)])
            }
        }
        return try text(header: ["scenario", "variant", "repetition", "seconds", "phase", "allocatedBytes", "residentBytes", "mainQueueDepth"], rows: rows)
    }
}
