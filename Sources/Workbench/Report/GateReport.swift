import Foundation

/// What the CI gate (`ambar-bench check`, `make ci`) writes for a CI system: a JUnit XML file,
/// one test case per baseline variant, and a Markdown summary of what regressed, by how much, against which
/// baseline and commit.
public enum GateReport {
    /// The problems of one baseline entry (they start with its "scenario variant #repetition:").
    static func problems(of entry: Baseline.Entry, in problems: [String]) -> [String] {
        let prefix = "\(entry.scenario) \(entry.variant) #\(entry.repetition): "
        return problems.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    public static func junit(baseline: Baseline, problems: [String]) -> String {
        func escape(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let failing = baseline.entries.filter { !Self.problems(of: $0, in: problems).isEmpty }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"ambar-bench check\" tests=\"\(baseline.entries.count)\" failures=\"\(failing)\">\n"
        xml += "  <testsuite name=\"baseline \(escape(baseline.name))\" tests=\"\(baseline.entries.count)\" failures=\"\(failing)\">\n"
        for entry in baseline.entries {
            let mine = Self.problems(of: entry, in: problems)
            xml += "    <testcase classname=\"\(escape(entry.scenario))\" name=\"\(escape(entry.variant)) #\(entry.repetition)\""
            if mine.isEmpty {
                xml += "/>\n"
            } else {
                xml += ">\n      <failure message=\"\(mine.count) figure(s) differ from the baseline\">\(escape(mine.joined(separator: "\n")))</failure>\n    </testcase>\n"
            }
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }

    public static func markdown(baseline: Baseline, problems: [String], commit: String?) -> String {
        let failing = baseline.entries.filter { !Self.problems(of: $0, in: problems).isEmpty }
        var md = "## Ambar CI gate: baseline `\(baseline.name)`\(commit.map { " at `\($0)`" } ?? "")\n\n"
        md += failing.isEmpty
            ? "Every figure of \(baseline.entries.count) variant(s) matches the baseline (simulated figures exactly).\n"
            : "**\(failing.count) of \(baseline.entries.count) variant(s) regressed.**\n"
        md += "\n| scenario | variant | result |\n|---|---|---|\n"
        for entry in baseline.entries {
            let mine = Self.problems(of: entry, in: problems)
            md += "| \(entry.scenario) | \(entry.variant) #\(entry.repetition) | \(mine.isEmpty ? "matches" : "\(mine.count) figure(s) differ") |\n"
        }
        for entry in failing {
            md += "\n### \(entry.scenario) \(entry.variant) #\(entry.repetition)\n\n"
            for line in Self.problems(of: entry, in: problems).prefix(50) { md += "- \(line)\n" }
        }
        return md
    }

    /// Writes `junit.xml` and `summary.md` into `folder`; returns their URLs.
    @discardableResult
    public static func write(baseline: Baseline, problems: [String], to folder: URL, commit: String?) throws -> (junit: URL, summary: URL) {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let junit = folder.appendingPathComponent("junit.xml"), summary = folder.appendingPathComponent("summary.md")
        try Data(self.junit(baseline: baseline, problems: problems).utf8).write(to: junit, options: .atomic)
        try Data(markdown(baseline: baseline, problems: problems, commit: commit).utf8).write(to: summary, options: .atomic)
        return (junit, summary)
    }

    /// The checked-out commit, when the working directory is a git clone (read from `.git`, no process started).
    public static func currentCommit(in directory: URL = URL(fileURLWithPath: ".")) -> String? {
        let git = directory.appendingPathComponent(".git")
        guard let head = try? String(contentsOf: git.appendingPathComponent("HEAD"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        guard head.hasPrefix("ref: ") else { return String(head.prefix(12)) }
        let ref = String(head.dropFirst(5))
        if let sha = try? String(contentsOf: git.appendingPathComponent(ref), encoding: .utf8) { return String(sha.prefix(12)) }
        let packed = (try? String(contentsOf: git.appendingPathComponent("packed-refs"), encoding: .utf8)) ?? ""
        return packed.split(separator: "\n").first { $0.hasSuffix(" \(ref)") }.map { String($0.prefix(12)) }
    }
}
