import Foundation
import Testing
@testable import Workbench

/// Reports/ keeps the last N runs of each scenario (Docs/workbench.md "Keeping reports"): by the runs' recorded
/// time, never a run a baseline names, the run just written or anything the workbench did not write.
@Suite("Reports/ retention (workbench.md: Keeping reports)")
struct ReportRetentionTests {
    /// Writes a run folder as the workbench does: manifest.json naming it, and an empty results.json.
    @discardableResult
    static func makeRun(_ root: URL, _ scenario: String, _ name: String, at time: String = "2026-01-01T00:00:00Z", runID: String? = nil) throws -> URL {
        let folder = root.appendingPathComponent("\(scenario)/\(name)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let manifest = Manifest(scenario: scenario, description: "", seed: 1, runID: runID ?? name, generatedAt: time, resolvedScenario: "",
                                overrides: [], variants: 0, environment: [:])
        try ReportWriter.encoder().encode(manifest).write(to: folder.appendingPathComponent("manifest.json"))
        try Data("[]".utf8).write(to: folder.appendingPathComponent("results.json"))
        return folder
    }

    static func names(_ root: URL, _ scenario: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(scenario).path)) ?? []).sorted()
    }

    @Test("keeps the last N runs of each scenario, ordered by recorded time then the run id's sequence, not by name")
    func keepsTheLastRunsOfEachScenario() throws {
        let dir = try TemporaryDirectory("retention")
        let root = dir.file("Reports")
        // Ten runs started within one second: -10 is the newest though it sorts before -2 by name.
        for n in 1...10 { try Self.makeRun(root, "a", n == 1 ? "20260101-000000" : "20260101-000000-\(n)") }
        // Recorded time first: the run named earliest was written last.
        try Self.makeRun(root, "b", "20260101-000001", at: "2026-01-02T00:00:00Z")
        try Self.makeRun(root, "b", "20260101-000002", at: "2026-01-01T00:00:00Z")
        try Self.makeRun(root, "b", "20260101-000003", at: "2026-01-01T12:00:00Z")
        try Self.makeRun(root, "b", "20260101-000004", at: "2026-01-01T06:00:00Z")

        #expect(try PolicyGuide.newestRun(of: "a", reportsRoot: root).lastPathComponent == "20260101-000000-10")
        // After a run of b, only b's runs are pruned.
        #expect(ReportRetention.prune(reportsRoot: root, keep: .last(3), scenario: "b").map(\.run.name) == ["20260101-000002"])
        #expect(Self.names(root, "a").count == 10)
        let removed = ReportRetention.prune(reportsRoot: root, keep: .last(3))
        #expect(Self.names(root, "a") == ["20260101-000000-10", "20260101-000000-8", "20260101-000000-9"])
        #expect(Self.names(root, "b") == ["20260101-000001", "20260101-000003", "20260101-000004"])
        #expect(removed.count == 7 && removed.allSatisfy { $0.bytes > 0 })
        #expect(ReportRetention.prune(reportsRoot: root, keep: .all).isEmpty)
        #expect(Self.names(root, "a").count == 3)
    }

    @Test("never removes a run a baseline file names, the run just written, or a scenario's newest run")
    func neverRemovesProtectedRuns() throws {
        let dir = try TemporaryDirectory("retention")
        let root = dir.file("Reports")
        let runs = try (1...4).map { try Self.makeRun(root, "a", "20260101-00000\($0)", at: "2026-01-01T00:00:0\($0)Z") }
        try dir.write("baselines/pinned.json", #"{ "report": "Reports/a/20260101-000002" }"#)
        let removed = ReportRetention.prune(reportsRoot: root, keep: .last(1), keeping: [runs[0]], baselines: dir.file("baselines"))
        #expect(removed.map(\.run.name) == ["20260101-000003"])
        #expect(Self.names(root, "a") == ["20260101-000001", "20260101-000002", "20260101-000004"])
    }

    @Test("leaves alone what the workbench did not write: look-alike names, other runs' manifests, symbolic links in or out")
    func leavesUnknownFilesAlone() throws {
        let dir = try TemporaryDirectory("retention")
        let root = dir.file("Reports")
        for n in 1...3 { try Self.makeRun(root, "a", "20260101-00000\(n)", at: "2026-01-01T00:00:0\(n)Z") }
        try dir.write("Reports/a/20250101-000000/notes.txt", "mine")          // a folder named like a run
        try dir.write("Reports/a/20250101-000001", "a file")                   // a file named like a run
        try Self.makeRun(root, "a", "20250101-000002", runID: "20250101-000009")  // its manifest names another run
        try dir.write("Reports/ci-gate/summary.md", "gate")
        try dir.write("Reports/README.md", "readme")
        // Outside Reports/: a run folder a link points to, a scenario folder a link points to, a folder a run links to.
        let outsideRun = try Self.makeRun(dir.file("outside"), "a", "20240101-000000")
        for n in 1...3 { try Self.makeRun(dir.file("elsewhere"), "c", "20240101-00000\(n)") }
        try dir.write("kept/precious.txt", "precious")
        let fm = FileManager.default
        try fm.createSymbolicLink(at: root.appendingPathComponent("a/20240101-000000"), withDestinationURL: outsideRun)
        try fm.createSymbolicLink(at: root.appendingPathComponent("c"), withDestinationURL: dir.file("elsewhere/c"))
        try fm.createSymbolicLink(at: root.appendingPathComponent("a/20260101-000001/link"), withDestinationURL: dir.file("kept"))

        let removed = ReportRetention.prune(reportsRoot: root, keep: .last(1))
        #expect(removed.map(\.run.name) == ["20260101-000001", "20260101-000002"])
        #expect(Self.names(root, "a") == ["20240101-000000", "20250101-000000", "20250101-000001", "20250101-000002", "20260101-000003"])
        #expect(fm.fileExists(atPath: dir.file("kept/precious.txt").path))
        #expect(fm.fileExists(atPath: outsideRun.appendingPathComponent("manifest.json").path))
        #expect(Self.names(dir.file("elsewhere"), "c").count == 3)
        #expect(fm.fileExists(atPath: dir.file("Reports/ci-gate/summary.md").path) && fm.fileExists(atPath: dir.file("Reports/README.md").path))
    }

    @Test("runs of one --shard position are counted apart, so the shards a merge needs stay")
    func shardsCountedApart() throws {
        let dir = try TemporaryDirectory("retention")
        let root = dir.file("Reports")
        for n in 1...2 {
            try Self.makeRun(root, "a", "20260101-00000\(n)-shard1of2", at: "2026-01-01T00:00:0\(n)Z")
            try Self.makeRun(root, "a", "20260101-00001\(n)-shard2of2", at: "2026-01-01T00:00:1\(n)Z")
        }
        try Self.makeRun(root, "a", "20260101-000020-merged", at: "2026-01-01T00:00:20Z")
        ReportRetention.prune(reportsRoot: root, keep: .last(1))
        #expect(Self.names(root, "a") == ["20260101-000002-shard1of2", "20260101-000012-shard2of2", "20260101-000020-merged"])
    }

    @Test("--keep takes a count of 1 or more or all; the environment variable when --keep is absent; 5 by default")
    func keepSetting() throws {
        #expect(try ReportRetention.parse("3") == .last(3))
        #expect(try ReportRetention.parse("all") == .all)
        #expect(throws: WorkbenchError.self) { try ReportRetention.parse("0") }
        #expect(throws: WorkbenchError.self) { try ReportRetention.parse("-1") }
        #expect(try ReportRetention.resolve(option: nil, environment: [:]) == .last(5))
        #expect(try ReportRetention.resolve(option: nil, environment: [ReportRetention.environmentVariable: "2"]) == .last(2))
        #expect(try ReportRetention.resolve(option: "all", environment: [ReportRetention.environmentVariable: "2"]) == .all)
        #expect(throws: WorkbenchError.self) { try ReportRetention.resolve(option: nil, environment: [ReportRetention.environmentVariable: "many"]) }
    }
}

/// The links of an index.html, relative to its folder.
func indexLinks(_ index: URL) throws -> [String] {
    let html = try String(contentsOf: index, encoding: .utf8)
    return html.components(separatedBy: "href=\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
}

extension CLITests {
    @Test("run --keep and clean-reports end to end: older runs removed, the space freed printed, the index links only runs that exist")
    func retentionEndToEnd() throws {
        let ws = try Self.workspace()
        for _ in 1...3 {
            let run = try bench(["run", "tiny.yaml", "--out", "out", "--keep", "2"], in: ws.url)
            #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        }
        try ws.write("out/tiny/20000101-000000", "not a run")
        #expect(Self.runFolders(ws).count == 3)  // two runs and the file
        let fm = FileManager.default
        func danglingLinks() throws -> [String] {
            try indexLinks(ws.file("out/index.html")).filter { !fm.fileExists(atPath: ws.file("out/\($0)").path) }
        }
        #expect(try indexLinks(ws.file("out/index.html")).count == 2)
        #expect(try danglingLinks().isEmpty)

        let clean = try bench(["clean-reports", "--out", "out", "--keep", "1"], in: ws.url)
        #expect(clean.status == 0, "stdout: \(clean.stdout)\nstderr: \(clean.stderr)")
        #expect(clean.stdout.hasPrefix("removed out/tiny/"))
        #expect(clean.stdout.contains("removed 1 older run(s), ") && clean.stdout.contains(" kB freed (keeping the last 1 run(s) of each scenario)\n"))
        #expect(Self.runFolders(ws).count == 2)
        #expect(fm.fileExists(atPath: ws.file("out/tiny/20000101-000000").path))
        #expect(try indexLinks(ws.file("out/index.html")).count == 1)
        #expect(try danglingLinks().isEmpty)

        let bad = try bench(["clean-reports", "--out", "out", "--keep", "0"], in: ws.url)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--keep takes a count of runs per scenario, 1 or more, or `all`"))
    }
}
