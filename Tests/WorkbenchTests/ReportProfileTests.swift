import Foundation
import Testing
@testable import Workbench

/// A simulated run's report says which profile priced it: its device, the command that wrote it and what the
/// evidence behind it determined (Docs/simulation.md "Cost profiles"; Docs/workbench.md "Reports").
@Suite("A report names its profile's device, author command and evidence")
struct ReportProfileTests {
    /// A profile with `device`, `writtenBy` and `evidence` where they are not empty.
    static func profile(device: String, writtenBy: String, evidence: String, in ws: TemporaryDirectory) throws -> URL {
        var keys = ""
        if !device.isEmpty { keys += "device: \(device)\n" }
        if !writtenBy.isEmpty { keys += "writtenBy: \(writtenBy)\n" }
        if !evidence.isEmpty { keys += "evidence: >-\n  \(evidence)\n" }
        return try MeasurementTests.profile([.rowInserted: 1000], in: ws, keys: keys)
    }

    static func scenario(profile: URL) -> String {
        """
        name: profiled
        profile: \(profile.path)
        stack: { topology: container }
        phases:
          - name: run
            actors:
              - viewer: { visibleObjects: 5 }
              - importer: { objects: 40, chunkSize: 20 }
          - name: verify
        """
    }

    static func run(_ profile: URL, in ws: TemporaryDirectory) throws -> (Manifest, String) {
        let file = try ws.write("profiled.yaml", Self.scenario(profile: profile))
        var options = Suite.Options()
        options.reportsRoot = ws.file("Reports")
        let outcome = try #require(try Suite.run(files: [file.path], options: options).first)
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: outcome.folder.appendingPathComponent("manifest.json")))
        let html = try String(contentsOf: outcome.folder.appendingPathComponent("report.html"), encoding: .utf8)
        return (manifest, html)
    }

    @Test("a run under a profile with device, writtenBy and evidence has them in manifest.json and on the report's profile line")
    func profileKeysReachTheReport() throws {
        let ws = try TemporaryDirectory("report-profile")
        let profile = try Self.profile(device: "iPhone 15 Pro (A17 Pro), iOS 17", writtenBy: "ambar-bench fit --out fitted-test.yaml",
                                       evidence: "3 parameters from 9 figures of 4 entries; residual < 20 % & checked on 2 more", in: ws)
        let (manifest, html) = try Self.run(profile, in: ws)
        let p = try #require(manifest.profile)
        #expect(p.name == "profile" && p.device == "iPhone 15 Pro (A17 Pro), iOS 17" && p.writtenBy == "ambar-bench fit --out fitted-test.yaml")
        #expect(p.evidence == "3 parameters from 9 figures of 4 entries; residual < 20 % & checked on 2 more")
        #expect(html.contains(" Device: iPhone 15 Pro (A17 Pro), iOS 17."))
        #expect(html.contains(" Written by <code>ambar-bench fit --out fitted-test.yaml</code>."))
        #expect(html.contains("<p class=\"sub\"><b>Evidence behind the profile:</b> 3 parameters from 9 figures of 4 entries; residual &lt; 20 % &amp; checked on 2 more</p>"))
    }

    @Test("a profile without those keys leaves them out of the report, and a manifest written without them still decodes")
    func absentKeysStayOut() throws {
        let ws = try TemporaryDirectory("report-profile-bare")
        let (manifest, html) = try Self.run(try Self.profile(device: "", writtenBy: "", evidence: "", in: ws), in: ws)
        let p = try #require(manifest.profile)
        #expect(p.device == nil && p.writtenBy == nil && p.evidence == nil)
        #expect(!html.contains("Device:") && !html.contains("Written by") && !html.contains("Evidence behind the profile"))
        // A run folder from before these keys: its profile has none of them.
        let old = """
            {"scenario":"s","description":"","seed":1,"runID":"r","generatedAt":"t","resolvedScenario":"","overrides":[],"variants":1,"environment":{},
             "profile":{"name":"iphone-15","description":"d","fittedTo":"f","estimated":20,"operations":20},
             "published":{"source":"a post","result":"r","profileFittedToIt":false,"directions":[]}}
            """
        let decoded = try JSONDecoder().decode(Manifest.self, from: Data(old.utf8))
        #expect(decoded.profile?.name == "iphone-15" && decoded.profile?.device == nil && decoded.profile?.evidence == nil)
    }
}
