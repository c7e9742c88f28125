import Foundation

/// The self-contained report (workbench.md "Reports"): no network, no JavaScript, inline SVG. Every piece of
/// text goes through ``escape(_:)``.
enum HTMLReport {
    /// The one escaping function for HTML text and attributes.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    static let palette = ["#2f6fb0", "#d9822b", "#3a9a5b", "#b8434f", "#7d5ba6", "#8c6d3f", "#c55a9b", "#5d6d7e", "#1f9aa0", "#a3a32a"]

    /// The whole report: the head and stylesheet, the summary, then one section after another.
    static func render(title: String, results: [VariantResult], manifest: Manifest, resolvedYAML: String) -> String {
        var html = head(title: title)
        html += summary(title: title, results: results, manifest: manifest)
        html += verdictSection(results)
        html += sideBySideSection(results)
        html += metricsSection(results)
        html += mainQueueSection(results)
        html += costRulesSection(results)
        html += repeatsSection(results)
        html += latencyAndMemorySection(results)
        html += conflictsSection(results)
        html += findingsSection(results)
        html += countersSection(results)
        html += scenarioAndEnvironment(resolvedYAML: resolvedYAML, manifest: manifest)
        return html
    }

    /// The document's head with its inline stylesheet, and the opening of its body.
    static func head(title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>
        body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#1d2430;padding:0 16px}
        h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;padding-bottom:4px}
        .sub{color:#5a6676}.verdict{display:inline-block;padding:4px 12px;border-radius:14px;font-weight:600;color:#fff}
        .pass{background:#2e8b57}.fail{background:#c0392b}.unknown{background:#8a8f98}.interrupted{background:#b9770e}
        table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid #e6eaef;padding:4px 8px;text-align:right;white-space:nowrap}
        th{background:#f4f6f9;font-weight:600;vertical-align:bottom}td:first-child,th:first-child,td.l,th.l{text-align:left}
        .ok{color:#2e8b57;font-weight:600}.bad{color:#c0392b;font-weight:600}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:14px}
        .card{border:1px solid #e2e7ee;border-radius:8px;padding:10px 12px;overflow-x:auto}.card h3{font-size:14px;margin:0 0 6px}
        pre{background:#f6f8fa;border:1px solid #e2e7ee;border-radius:6px;padding:10px;overflow:auto;font-size:12px}
        .legend span{display:inline-block;margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
        svg text{font-size:11px;fill:#4a5565}.scroll{overflow-x:auto}th.w{white-space:normal;vertical-align:bottom;min-width:40px}
        </style></head><body>
        """
    }

    /// The title, the overall verdict, what did not run or ran in part, the knee sentences, the ranking and what
    /// the times mean.
    static func summary(title: String, results: [VariantResult], manifest: Manifest) -> String {
        let overall = overallVerdict(results, interrupted: manifest.interrupted != nil, failed: manifest.failed != nil)
        var html = "<h1>\(escape(title))</h1>\n<p class=\"sub\">\(escape(manifest.description))</p>\n"
        html += "<p><span class=\"verdict \(overall)\">\(overall.uppercased())</span> &nbsp; \(results.count) variant run(s), seed \(manifest.seed), \(escape(manifest.generatedAt))</p>\n"

        if let stopped = manifest.failed ?? manifest.interrupted {
            html += "<p class=\"bad\">Not every variant ran: \(escape(stopped)). This report holds the \(results.count) variant run(s) that ran.</p>\n"
        }
        for r in results {
            if let partial = r.partial { html += "<p class=\"bad\">\(escape(label(r))) #\(r.repetition) is partial (\(escape(partial))): its figures cover the part that ran, and it is not ranked.</p>\n" }
        }
        for sentence in manifest.kneeSentences(results) { html += "<p class=\"knee\"><strong>\(escape(sentence))</strong></p>\n" }
        html += rankingSection(manifest.ranking(results))
        html += modeSection(results, manifest: manifest)
        return html
    }

    /// The thresholds met and missed, and each variant's oracle verdict and findings in brief.
    static func verdictSection(_ results: [VariantResult]) -> String {
        let failedThresholds = results.flatMap(\.thresholds).filter { !$0.passed && $0.fails }
        var html = "<h2>Verdict and thresholds</h2>\n"
        let thresholdRows = results.flatMap { r in r.thresholds.map { (r, $0) } }
        if thresholdRows.isEmpty {
            html += "<p class=\"sub\">No thresholds in this scenario.</p>\n"
        } else {
            html += "<table><tr><th class=\"l\">variant</th><th class=\"l\">metric</th><th>statistic</th><th>limit</th><th>value</th><th>result</th></tr>\n"
            for (r, t) in thresholdRows {
                let sign = t.polarity == "lowerIsBetter" ? "≤" : "≥"
                html += "<tr><td>\(escape(label(r)))</td><td class=\"l\">\(escape(t.metric))</td><td>\(escape(t.statistic))</td><td>\(sign) \(fmt(t.limit))</td><td>\(t.value.map(fmt) ?? "–")</td><td class=\"\(t.passed ? "ok" : (t.fails ? "bad" : ""))\">\(t.passed ? "met" : (t.fails ? "missed" : "past (a finding)"))</td></tr>\n"
            }
            html += "</table>\n"
        }
        html += "<table><tr><th class=\"l\">variant</th><th class=\"l\">oracle</th><th class=\"l\">findings</th></tr>\n"
        for r in results {
            html += "<tr><td>\(escape(label(r)))</td><td class=\"l\"><span class=\"verdict \(r.oracle.verdict.rawValue)\">\(r.oracle.verdict.rawValue)</span></td><td class=\"l\">\(escape(r.oracle.summary))\(r.eventHistory.map { "<br><small>" + escape($0.statement) + "</small>" } ?? "")</td></tr>\n"
        }
        html += "</table>\n"
        if !failedThresholds.isEmpty { html += "<p class=\"bad\">\(failedThresholds.count) threshold(s) missed.</p>\n" }
        return html
    }

    /// Every summary figure, a figure a row and a variant a column, six variants a table, so that every column fits
    /// the page (no scrolling, nothing hidden).
    static func sideBySideSection(_ results: [VariantResult]) -> String {
        var html = "<h2>Variants side by side</h2>\n"
        let columns = CSVOutput.summaryColumns.filter { !["scenario", "repetition", "variant"].contains($0.0) }
        for start in stride(from: 0, to: results.count, by: 6) {
            let group = Array(results[start..<min(start + 6, results.count)])
            html += "<table style=\"table-layout:fixed\"><tr><th class=\"l\" style=\"width:170px\">figure</th>"
            html += group.map { "<th class=\"w\" style=\"word-break:break-all\">\(escape(label($0)))</th>" }.joined() + "</tr>\n"
            for (name, value) in columns {
                html += "<tr><td class=\"l\">\(header(name))</td>" + group.map { "<td>\(escape(value($0)))</td>" }.joined() + "</tr>\n"
            }
            html += "</table>\n"
        }
        return html
    }

    /// A bar chart per key metric, one bar per variant.
    static func metricsSection(_ results: [VariantResult]) -> String {
        var html = "<h2>Metrics</h2>\n<div class=\"grid\">\n"
        let bars: [(String, String, String, String)] = [
            ("mergeLatency p99 (ms)", "mergeLatency", "p99", ""), ("mainBusy p99 (ms)", "mainBusy", "p99", ""),
            ("hitchRatio (ms/s, 60 Hz)", "hitchRatio", "value", "60Hz"), ("saveFailures", "saveFailures", "count", ""),
            ("lostUpdates", "lostUpdates", "count", ""), ("refusedChanges", "refusedChanges", "count", ""),
            ("memoryAllocated peak (MiB)", "memoryAllocated", "peak", ""),
        ]
        for (heading, metric, statistic, labelFilter) in bars {
            var values = results.map { r in (label(r), r.value(metric, statistic, label: labelFilter) ?? 0) }
            if metric == "memoryAllocated" { values = values.map { ($0.0, $0.1 / 1_048_576) } }
            html += "<div class=\"card\"><h3>\(escape(heading))</h3>\(barChart(values))</div>\n"
        }
        html += "</div>\n"
        return html
    }

    /// The merge latency percentile curves and the memory over time.
    static func latencyAndMemorySection(_ results: [VariantResult]) -> String {
        var html = "<h2>Merge latency percentiles</h2>\n<div class=\"card\">\(curveChart(results))</div>\n"
        let hostNote = results.contains { $0.mode == ExecutionMode.simulated.rawValue } ? " A host figure: this machine's allocator, not the device's, and not exact from run to run; the time axis is virtual." : ""
        html += "<h2>Memory over time</h2>\n<p class=\"sub\">jemalloc allocated bytes (less thread caches) above each variant's first sample. Variants run one after another in one process: each one is measured from its own start, after jemalloc returned the pages the previous variant freed (an arena purge); its resident memory at that start and its growth above it are <code>memoryResident.value[start]</code> and <code>memoryResident.peak[growth]</code> in metrics.csv (<code>memoryResident.peak</code> is the process's).\(hostNote)</p>\n<div class=\"card\">\(memoryChart(results))</div>\n"
        return html
    }

    /// The conflicts of each variant by layer and by what its merge policy did with them.
    static func conflictsSection(_ results: [VariantResult]) -> String {
        var html = "<h2>Conflicts by layer and policy outcome</h2>\n<table><tr><th class=\"l\">variant</th><th class=\"l\">series</th><th>count</th></tr>\n"
        for r in results {
            for m in r.metrics where m.metric == "conflicts" && (m.value > 0 || m.label.hasPrefix("layer:")) {
                html += "<tr><td>\(escape(label(r)))</td><td class=\"l\">\(escape(m.label))</td><td>\(fmt(m.value))</td></tr>\n"
            }
        }
        html += "</table>\n"
        return html
    }

    /// The oracle's findings, the first 30 of each variant, and how to replay the first one that has a step.
    static func findingsSection(_ results: [VariantResult]) -> String {
        var html = "<h2>Oracle findings</h2>\n"
        let findings = results.flatMap { r in r.oracle.findings.prefix(30).map { (r, $0) } }
        if findings.isEmpty {
            html += "<p class=\"sub\">No findings: no lost update, stale value, duplicate or read-only save.</p>\n"
        } else {
            let replayable = findings.contains { $0.1.step != nil }
            html += "<table><tr><th class=\"l\">variant</th><th class=\"l\">kind</th><th>object</th><th class=\"l\">field</th><th class=\"l\">detail</th>\(replayable ? "<th class=\"l\">seed, step</th>" : "")</tr>\n"
            for (r, f) in findings {
                html += "<tr><td>\(escape(label(r)))</td><td class=\"l\">\(escape(f.kind))</td><td>\(f.key)</td><td class=\"l\">\(escape(f.field))</td><td class=\"l\">\(escape(f.detail))</td>"
                if replayable { html += "<td class=\"l\">\(f.step.map { "seed \(r.seed), step \($0)" } ?? "–")</td>" }
                html += "</tr>\n"
            }
            html += "</table>\n"
            if let (r, f) = findings.first(where: { $0.1.step != nil }), let step = f.step {
                html += "<p class=\"sub\">To see the interleaving that led to a finding (which queue ran what, at which virtual time): <code>ambar-bench replay SCENARIO.yaml --seed \(r.seed) --until \(step) --variant '\(escape(r.variant))'</code></p>\n"
            }
        }
        return html
    }

    /// The counters of every variant: the deterministic ones first, then the timing-dependent ones worth reading.
    static func countersSection(_ results: [VariantResult]) -> String {
        var html = "<h2>Counters</h2>\n<p class=\"sub\">\(results.contains { $0.mode == ExecutionMode.simulated.rawValue } ? "Simulated: every counter is exact for this scenario and seed, and the CI gate compares them all exactly." : "The first columns are deterministic: the same scenario and seed give the same numbers on any machine, and the CI gate compares them exactly. The others depend on timing.")</p>\n<div class=\"scroll\"><table><tr><th class=\"l\">variant</th>"
        let counterNames = Array(Set(results.flatMap { $0.counters.keys }).filter { !$0.hasPrefix("setup") }).sorted()
        let shown = counterNames.filter { MetricCatalog.deterministic.contains($0) }
            + counterNames.filter { name in !MetricCatalog.deterministic.contains(name) && (["mergeObjectsRefreshed", "mergeObjectsExamined", "faultsFired.view"].contains(name) || name.hasPrefix("sql")) }
        for name in shown { html += "<th class=\"w\">\(header(name))</th>" }
        html += "</tr>\n"
        for r in results { html += "<tr><td>\(escape(label(r)))</td>" + shown.map { "<td>\(r.counters[$0] ?? 0)</td>" }.joined() + "</tr>\n" }
        html += "</table></div>\n"
        return html
    }

    /// The scenario as it ran, the environment, and the end of the document.
    static func scenarioAndEnvironment(resolvedYAML: String, manifest: Manifest) -> String {
        var html = "<h2>Resolved scenario</h2>\n<pre>\(escape(resolvedYAML))</pre>\n"
        html += "<h2>Environment</h2>\n<table>\n"
        for (k, v) in manifest.environment.sorted(by: { $0.key < $1.key }) { html += "<tr><th class=\"l\">\(escape(k))</th><td class=\"l\">\(escape(v))</td></tr>\n" }
        html += "</table>\n</body></html>\n"
        return html
    }

    /// What the times mean: virtual device time on a named profile (simulated) or this machine's (real).
    static func modeSection(_ results: [VariantResult], manifest: Manifest) -> String {
        guard results.contains(where: { $0.mode == ExecutionMode.simulated.rawValue }) else { return "" }
        var html = "<p class=\"sub\"><b>Simulated</b> on the cost profile <b>\(escape(manifest.profile?.name ?? results[0].profile))</b>: every time is virtual device "
        html += "time (the operations each queue performed × the profile's cost of each), and every count and time is exact for this scenario and seed "
        html += "on any machine. Memory, CPU time and wall time are this machine's (host figures)."
        guard let p = manifest.profile else { return html + "</p>\n" }
        html += " The profile: \(escape(p.description))"
        if let device = p.device, !device.isEmpty { html += " Device: \(escape(device))." }
        if let command = p.writtenBy, !command.isEmpty { html += " Written by <code>\(escape(command))</code>." }
        html += " \(p.estimated) of \(p.operations) costs are estimates"
        html += p.fittedTo.isEmpty ? ".</p>\n" : "; it was fitted to: \(escape(p.fittedTo))</p>\n"
        if let evidence = p.evidence, !evidence.isEmpty { html += "<p class=\"sub\"><b>Evidence behind the profile:</b> \(escape(evidence))</p>\n" }
        return html
    }

    /// Simulated mode: the main queue's time per variant, and which cost rules it came from.
    static func mainQueueSection(_ results: [VariantResult]) -> String {
        let simulated = results.filter { $0.mode == ExecutionMode.simulated.rawValue }
        guard !simulated.isEmpty else { return "" }
        var html = "<h2>The main queue on the device profile</h2>\n<div class=\"scroll\"><table><tr><th class=\"l\">variant</th>"
        let columns: [(String, String, String, String)] = [
            ("busy, all blocks (ms)", "mainBusy", "total", ""), ("of which waiting (ms)", "mainBlocked", "total", ""),
            ("longest stall (ms)", "mainStall", "max", ""), ("blocks", "mainBlocks", "count", ""),
            ("merge latency p50 (ms)", "mergeLatency", "p50", ""), ("merge latency p99 (ms)", "mergeLatency", "p99", ""),
            ("frames", "frames", "value", ""), ("missed frames", "framesMissed", "count", ""),
            ("hitch ratio (ms/s, 60 Hz)", "hitchRatio", "value", "60Hz"), ("run (virtual s)", "runTime", "value", ""),
        ]
        for (name, _, _, _) in columns { html += "<th class=\"w\">\(escape(name))</th>" }
        html += "</tr>\n"
        for r in simulated {
            html += "<tr><td>\(escape(label(r)))</td>" + columns.map { c in "<td>\(r.value(c.1, c.2, label: c.3).map(fmt) ?? "–")</td>" }.joined() + "</tr>\n"
        }
        html += "</table></div>\n"
        html += "<p class=\"sub\">Where each variant's main-queue time went: the operations that ran on the main queue, the count of each and the virtual time the profile gives it (the five largest). These are the cost rules that order the variants.</p>\n"
        html += "<table><tr><th class=\"l\">variant</th><th class=\"l\">operation</th><th>count on the main queue</th><th>virtual time (ms)</th><th>share of the main queue's busy time</th></tr>\n"
        for r in simulated {
            let busy = r.value("mainBusy", "total") ?? 0
            let rows = r.metrics.filter { $0.metric == "costedTime" && $0.label.hasPrefix("main:") && $0.value > 0 }.sorted { ($0.value, $1.label) > ($1.value, $0.label) }
            for m in rows.prefix(5) {
                let op = String(m.label.dropFirst(5))
                let count = r.value("costedOperations", "count", label: m.label) ?? 0
                let share = busy > 0 ? String(format: "%.0f%%", m.value / busy * 100) : "–"
                html += "<tr><td>\(escape(label(r)))</td><td class=\"l\">\(escape(op))</td><td>\(fmt(count))</td><td>\(fmt(m.value))</td><td>\(share)</td></tr>\n"
            }
        }
        html += "</table>\n"
        html += "<p class=\"sub\">Main-queue busy time by what the blocks did (virtual ms): merges of other contexts' saves, child saves pushed into the view context, the view context's own saves, fetches, frames.</p>\n"
        html += "<table><tr><th class=\"l\">variant</th>" + MainBlockKind.allCases.map { "<th>\($0.rawValue)</th>" }.joined() + "</tr>\n"
        for r in simulated {
            html += "<tr><td>\(escape(label(r)))</td>" + MainBlockKind.allCases.map { "<td>\(r.value("mainBusy", "total", label: $0.rawValue).map(fmt) ?? "–")</td>" }.joined() + "</tr>\n"
        }
        html += "</table>\n"
        html += "<p class=\"sub\">Work counted per queue (Docs/what-the-workbench-counts.md): on the main queue / on every other queue.</p>\n"
        let counterColumns: [(String, String, String)] = [
            ("objects registered", "objectsRegistered", ""), ("faults from row cache", "faultsFulfilled", ",source=rowCache"),
            ("faults from store", "faultsFulfilled", ",source=store"), ("rows fetched", "rowsFetched", ""), ("ID rows fetched", "idRowsFetched", ""),
            ("objects refreshed", "objectsRefreshed", ""),
            ("SELECTs", "sqlStatements", ",kind=select"), ("transactions", "transactions", ""), ("notifications", "notificationsPosted", ""),
            ("controller evaluations", "frcObjectsEvaluated", ""), ("controller comparisons", "frcComparisons", ""),
            ("controller entries moved", "frcObjectsMoved", ""), ("controller sections updated", "frcSectionsUpdated", ""),
        ]
        html += "<div class=\"scroll\"><table><tr><th class=\"l\">variant</th>" + counterColumns.map { "<th class=\"w\">\(escape($0.0))</th>" }.joined() + "<th class=\"w\">controller size (end / peak)</th></tr>\n"
        for r in simulated {
            html += "<tr><td>\(escape(label(r)))</td>" + counterColumns.map { c in
                let main = r.value(c.1, "count", label: "queue=main\(c.2)"), other = r.value(c.1, "count", label: "queue=background\(c.2)")
                return "<td>\(main.map(fmt) ?? "–") / \(other.map(fmt) ?? "–")</td>"
            }.joined()
            html += "<td>\(r.value("frcObjects", "value").map(fmt) ?? "–") / \(r.value("frcObjects", "peak").map(fmt) ?? "–")</td></tr>\n"
        }
        return html + "</table></div>\n"
    }

    /// The Core Data behaviours the figures rest on, with their confidence (Docs/what-the-workbench-counts.md).
    static func costRulesSection(_ results: [VariantResult]) -> String {
        let used = CostRule.catalog.filter { rule in results.contains { $0.costRules.contains(rule.id) } }
        guard !used.isEmpty else { return "" }
        var html = "<h2>Cost rules behind these figures</h2>\n<p class=\"sub\">What Core Data does that each figure assumes, and how sure we are of it. Details and sources: Docs/what-the-workbench-counts.md.</p>\n"
        html += "<table><tr><th class=\"l\">rule</th><th class=\"l\">confidence</th><th class=\"l\">figures it moves</th><th class=\"l\">variants</th></tr>\n"
        for rule in used {
            let variants = results.filter { $0.costRules.contains(rule.id) }.map(label)
            let names = Set(variants).count == Set(results.map(label)).count ? "all" : variants.joined(separator: ", ")
            html += "<tr><td class=\"l\" style=\"white-space:normal\">\(escape(rule.statement))</td><td class=\"l\">\(escape(rule.confidence.rawValue))</td><td class=\"l\" style=\"white-space:normal\">\(escape(rule.figures))</td><td class=\"l\" style=\"white-space:normal\">\(escape(names))</td></tr>\n"
        }
        return html + "</table>\n"
    }

    /// Repeated variants: each key metric's median and spread over the repetitions, and whether the variants'
    /// differences are within that spread.
    static func repeatsSection(_ results: [VariantResult]) -> String {
        let summaries = RepeatSummary.make(results)
        guard !summaries.isEmpty else { return "" }
        let keys = ["mainBusy.total", "mainStall.max", "mergeLatency.p99", "hitchRatio.value[60Hz]", "conflicts.count[layer:rowCache]",
                    "conflicts.count[layer:database]", "saveFailures.count", "lostUpdates.count", "refusedChanges.count", "lostUpdates.count[promised]",
                    "staleReads.count"]
        let seeds = summaries[0].seeds
        var html = "<h2>Repeats: median and spread</h2>\n<p class=\"sub\">\(summaries[0].repetitions) repetitions per variant"
        if results.contains(where: { $0.mode == ExecutionMode.simulated.rawValue }) {
            html += ", one seed each (\(seeds.first!)…\(seeds.last!)): the spread is over seeds, not over timing noise (a simulated run repeats exactly)"
        }
        html += ". Each cell: median [min–max]. Every metric's spread is in repeats.csv.</p>\n<div class=\"scroll\"><table><tr><th class=\"l\">variant</th>"
        for key in keys { html += "<th class=\"w\">\(header(key))</th>" }
        html += "</tr>\n"
        for s in summaries {
            html += "<tr><td>\(escape(s.variant))</td>" + keys.map { key in
                guard let m = s.metric(key) else { return "<td>–</td>" }
                return "<td>\(fmt(m.median)) [\(fmt(m.min))–\(fmt(m.max))]</td>"
            }.joined() + "</tr>\n"
        }
        html += "</table></div>\n"
        guard summaries.count > 1 else { return html }
        html += "<p class=\"sub\">Pairs of variants: a difference is <b>within the spread</b> when their min–max ranges overlap (it could be the seed, not the variant).</p>\n"
        html += "<table><tr><th class=\"l\">metric</th><th class=\"l\">variant</th><th class=\"l\">variant</th><th class=\"l\">verdict</th></tr>\n"
        for key in keys {
            for i in summaries.indices {
                for j in summaries.indices where j > i {
                    guard let a = summaries[i].metric(key), let b = summaries[j].metric(key), a.median != b.median else { continue }
                    let within = RepeatSummary.overlap(a, b)
                    html += "<tr><td class=\"l\">\(escape(key))</td><td class=\"l\">\(escape(summaries[i].variant)) (\(fmt(a.median)))</td><td class=\"l\">\(escape(summaries[j].variant)) (\(fmt(b.median)))</td>"
                    html += "<td class=\"l \(within ? "" : "ok")\">\(within ? "within the spread" : "apart: the ranges do not overlap")</td></tr>\n"
                }
            }
        }
        return html + "</table>\n"
    }

    /// A column name that may wrap after its dots and before its inner capitals (camelCase words).
    static func header(_ name: String) -> String {
        var out = ""
        for c in escape(name) {
            if c.isUppercase, let last = out.last, last.isLowercase { out += "<wbr>" }
            out.append(c)
            if c == "." { out += "<wbr>" }
        }
        return out
    }

    /// The report opens with the variants ranked by the scenario's objective, a sentence each,
    /// and flags every variant that lost acknowledged writes, promised or not.
    static func rankingSection(_ ranking: Ranking) -> String {
        guard !ranking.entries.isEmpty else { return "" }
        var html = "<h2>Which variant is best for this scenario</h2>\n"
        let basis = ranking.repetitions > 1
            ? "medians of \(ranking.repetitions) repetitions (ranges in brackets); a variant ranks above another only when it is ahead in every repetition"
            : "one run per variant; run with --repeat N to see which places hold across seeds"
        html += "<p class=\"sub\">Objective: \(escape(ranking.objectiveText)) (the scenario's <code>objective:</code>; Docs/scenarios.md). Ranked on \(basis).</p>\n<ol>\n"
        for e in ranking.entries { html += "<li value=\"\(e.place)\">\(escape(e.sentence))</li>\n" }
        html += "</ol>\n"
        if !ranking.flags.isEmpty {
            html += "<p><b>Losses to know about</b> (the oracle's count of acknowledged writes that did not survive):</p>\n<ul>\n"
            for f in ranking.flags { html += "<li class=\"bad\">\(escape(f.text))</li>\n" }
            html += "</ul>\n"
        }
        return html
    }

    /// `fail` when the run stopped on a failure; `interrupted` when a signal cut it short or a variant is partial
    /// (what ran is no whole run, whatever its figures); else `fail`, `unknown` or `pass` from the figures.
    static func overallVerdict(_ results: [VariantResult], interrupted: Bool, failed: Bool = false) -> String {
        if failed { return "fail" }
        if interrupted || results.contains(where: { $0.partial != nil }) { return "interrupted" }
        if results.contains(where: { $0.oracle.verdict == .fail || $0.thresholds.contains { !$0.passed && $0.fails } }) { return "fail" }
        if results.contains(where: { $0.oracle.verdict == .unknown }) { return "unknown" }
        return "pass"
    }

    /// A short label: the matrix values (keys are in the table), or the topology.
    static func label(_ r: VariantResult) -> String {
        let values = r.parameters.sorted { $0.key < $1.key }.map(\.value).joined(separator: " / ")
        let base = values.isEmpty ? r.topology : values
        return r.repetition > 1 ? "\(base) #\(r.repetition)" : base
    }

    static func fmt(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e12 { return String(Int64(v)) }
        return String(format: v < 10 ? "%.3f" : "%.1f", v)
    }

    static func barChart(_ values: [(String, Double)]) -> String {
        let width = 340.0, rowHeight = 22.0, labelWidth = 150.0
        let maxValue = max(values.map(\.1).max() ?? 0, 1e-9)
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(rowHeight * Double(values.count) + 6))\" role=\"img\">"
        for (i, (name, value)) in values.enumerated() {
            let y = Double(i) * rowHeight + 3
            let w = max(1, (width - labelWidth - 60) * value / maxValue)
            svg += "<text x=\"0\" y=\"\(y + 14)\">\(escape(String(name.prefix(24))))</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y + 3)\" width=\"\(String(format: "%.1f", w))\" height=\"14\" fill=\"\(palette[i % palette.count])\" rx=\"2\"/>"
            svg += "<text x=\"\(String(format: "%.1f", labelWidth + w + 4))\" y=\"\(y + 14)\">\(fmt(value))</text>"
        }
        return svg + "</svg>"
    }

    static func legend(_ results: [VariantResult]) -> String {
        "<div class=\"legend\">" + results.enumerated().map { i, r in "<span><i style=\"background:\(palette[i % palette.count])\"></i>\(escape(label(r)))</span>" }.joined() + "</div>"
    }

    /// Percentile (x, as -log10(1 - p/100) so the tail spreads out) against milliseconds.
    static func curveChart(_ results: [VariantResult]) -> String {
        let w = 760.0, h = 240.0, left = 62.0, bottom = 24.0
        // A percentile needs enough samples: p is drawn only where (1 - p/100) × n ≥ 1.
        let curves = results.map { r in
            let n = r.value("mergeLatency", "count") ?? 0
            return r.mergeCurve.filter { $0.count == 2 && (1 - $0[0] / 100) * n >= 1 - 1e-9 }
        }
        let maxMs = max(curves.flatMap { $0.map { $0[1] } }.max() ?? 1, 0.001)
        func x(_ p: Double) -> Double { left + (w - left - 10) * min(4, -log10(max(1e-4, 1 - p / 100))) / 4 }
        func y(_ ms: Double) -> Double { (h - bottom) - (h - bottom - 10) * ms / maxMs }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" role=\"img\">"
        svg += "<line x1=\"\(left)\" y1=\"\(h - bottom)\" x2=\"\(w - 10)\" y2=\"\(h - bottom)\" stroke=\"#9aa4b1\"/><line x1=\"\(left)\" y1=\"10\" x2=\"\(left)\" y2=\"\(h - bottom)\" stroke=\"#9aa4b1\"/>"
        for (p, name) in [(0.0, "p0"), (90, "p90"), (99, "p99"), (99.9, "p99.9"), (99.99, "p99.99+")] {
            svg += "<text x=\"\(String(format: "%.0f", x(p)))\" y=\"\(h - 6)\" text-anchor=\"\(p == 0 ? "start" : (p == 99.99 ? "end" : "middle"))\">\(name)</text>"
        }
        for f in [0.0, 0.5, 1.0] { svg += "<text x=\"4\" y=\"\(String(format: "%.0f", y(maxMs * f) + 4))\">\(fmt(maxMs * f)) ms</text>" }
        for (i, curve) in curves.enumerated() where !curve.isEmpty {
            let points = curve.map { String(format: "%.1f,%.1f", x($0[0]), y($0[1])) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(palette[i % palette.count])\" stroke-width=\"2\" points=\"\(points)\"/>"
        }
        if curves.allSatisfy(\.isEmpty) { svg += "<text x=\"\(left + 20)\" y=\"40\">no merges were recorded</text>" }
        return svg + "</svg>" + legend(results)
    }

    static func memoryChart(_ results: [VariantResult]) -> String {
        let w = 760.0, h = 220.0, left = 60.0, bottom = 24.0
        let series = results.map { r -> [(Double, Double)] in
            let points = r.timeseries.compactMap { s in s.allocated.map { (s.seconds, Double($0) / 1_048_576) } }
            guard let first = points.first else { return [] }
            return points.map { ($0.0 - first.0, max(0, $0.1 - first.1)) }
        }
        let maxT = max(series.flatMap { $0.map(\.0) }.max() ?? 1, 0.001)
        let maxM = max(series.flatMap { $0.map(\.1) }.max() ?? 1, 0.001)
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" role=\"img\">"
        svg += "<line x1=\"\(left)\" y1=\"\(h - bottom)\" x2=\"\(w - 10)\" y2=\"\(h - bottom)\" stroke=\"#9aa4b1\"/><line x1=\"\(left)\" y1=\"10\" x2=\"\(left)\" y2=\"\(h - bottom)\" stroke=\"#9aa4b1\"/>"
        svg += "<text x=\"\(w - 60)\" y=\"\(h - 6)\">\(fmt(maxT)) s</text><text x=\"4\" y=\"16\">\(fmt(maxM)) MiB</text><text x=\"4\" y=\"\(h - bottom)\">0</text>"
        for (i, points) in series.enumerated() where !points.isEmpty {
            let text = points.map { String(format: "%.1f,%.1f", left + (w - left - 10) * $0.0 / maxT, (h - bottom) - (h - bottom - 10) * $0.1 / maxM) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(palette[i % palette.count])\" stroke-width=\"1.5\" points=\"\(text)\"/>"
        }
        if series.allSatisfy(\.isEmpty) { svg += "<text x=\"\(left + 20)\" y=\"40\">jemalloc statistics unavailable</text>" }
        return svg + "</svg>" + legend(results)
    }
}
