import ObjectGraph

/// The operations that cost time on a device, counted per queue (Docs/what-the-workbench-counts.md, "Per-queue counters").
///
/// Names and labels are shared by reports, CSV and profiles: a metric per counter, statistic `count`, labelled
/// `queue=main` or `queue=background` (every queue but the main one), plus `source=` for fault fulfilments and
/// `kind=` for SQL statements. Simulated mode only: there every operation is counted on the thread that does it and
/// the counts are exact for a scenario and seed (the CI gate compares them exactly).
enum QueueCounters {
    /// A reported counter: its metric name, the operation it counts and the extra label it carries.
    struct Counter {
        let metric: String
        let operation: CostedOperation
        let label: String?
    }

    static let counters: [Counter] = [
        Counter(metric: "objectsRegistered", operation: .objectRegistered, label: nil),
        Counter(metric: "objectsDeleted", operation: .objectDeleted, label: nil),
        Counter(metric: "faultsFulfilled", operation: .faultFulfilledFromCache, label: "source=rowCache"),
        Counter(metric: "faultsFulfilled", operation: .faultFulfilledFromStore, label: "source=store"),
        Counter(metric: "rowsFetched", operation: .rowFetched, label: nil),
        Counter(metric: "idRowsFetched", operation: .idRowFetched, label: nil),
        Counter(metric: "batchRowsWritten", operation: .batchRowInserted, label: "kind=insert"),
        Counter(metric: "batchRowsWritten", operation: .batchRowUpdated, label: "kind=update"),
        Counter(metric: "batchRowsWritten", operation: .batchRowDeleted, label: "kind=delete"),
        Counter(metric: "rowsExamined", operation: .rowExamined, label: nil),
        Counter(metric: "sortsPerformed", operation: .sortPerformed, label: nil),
        Counter(metric: "objectsRefreshed", operation: .objectRefreshed, label: nil),
        Counter(metric: "transactions", operation: .transaction, label: nil),
        Counter(metric: "notificationsPosted", operation: .notificationPosted, label: nil),
        Counter(metric: "frcObjectsEvaluated", operation: .controllerObjectEvaluated, label: nil),
        Counter(metric: "frcComparisons", operation: .controllerComparison, label: nil),
        Counter(metric: "frcObjectsMoved", operation: .controllerObjectMoved, label: nil),
        Counter(metric: "frcSectionsUpdated", operation: .controllerSectionUpdated, label: nil),
    ]

    /// The metric names, for the catalog.
    static let metricNames = Set(counters.map(\.metric) + ["sqlStatements"])

    /// One row per counter and queue (zeros included, so a counter that appears is a change the CI gate sees).
    static func rows(_ totals: OperationTotals) -> [MetricRow] {
        var rows: [MetricRow] = []
        func add(_ metric: String, main: Int, all: Int, extra: String?) {
            for (queue, n) in [("main", main), ("background", all - main)] {
                let label = ["queue=\(queue)", extra].compactMap { $0 }.joined(separator: ",")
                rows.append(MetricRow(metric, "count", Double(n), "count", label: label))
            }
        }
        for c in counters {
            add(c.metric, main: totals.main[c.operation.rawValue], all: totals.all[c.operation.rawValue], extra: c.label)
        }
        for kind in StatementKind.allCases {
            add("sqlStatements", main: totals.statementsMain[kind.rawValue], all: totals.statementsAll[kind.rawValue], extra: "kind=\(kind.name)")
        }
        return rows
    }
}
