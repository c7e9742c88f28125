import Foundation
import Testing
@testable import Workbench

/// A scenario describes a workload; the published measurement it reproduces is an entry of Profiles/evidence/
/// (Profiles/README.md "Evidence"). A `published:` key in a scenario is refused at its line, saying where such a
/// measurement goes (Docs/scenarios.md "Top-level keys").
@Suite("A scenario's published: key is refused and points to Profiles/evidence/")
struct PublishedKeyTests {
    static let yaml = """
        name: pub
        stack: { topology: ambar }
        phases:
          - name: run
            actors:
              - importer: { objects: 20, chunkSize: 10 }
          - name: verify
        matrix:
          phases.run.importer.chunkSize: [20, 10]
        published:
          source: "a post"
          result: "one big save stalls the UI"
        """

    static func error(_ text: String) throws -> ScenarioError {
        do {
            _ = try ScenarioLoader.load(text: text, file: "pub.yaml")
        } catch let error as ScenarioError {
            return error
        }
        Issue.record("a scenario with a published: key was accepted")
        throw CancellationError()
    }

    @Test("a published: block is an unknown key, named at its line, and the message says published measurements live in Profiles/evidence/")
    func publishedBlockIsRefusedAtItsLine() throws {
        let error = try Self.error(Self.yaml)
        #expect(error.file == "pub.yaml" && error.line == 10 && error.column == 1 && error.field == "published")
        #expect(error.message.hasPrefix("unknown key; published measurements live in Profiles/evidence/"))
        #expect(error.message.contains("Profiles/README.md \"Evidence\"") && error.message.contains("ambar-bench evidence"))
        #expect(error.description.hasPrefix("pub.yaml:10:1: published: unknown key"))
    }

    @Test("a published: key is refused wherever it stands among the top-level keys, and whatever it holds")
    func publishedKeyAnywhereIsRefused() throws {
        let withoutBlock = Self.yaml.components(separatedBy: "\npublished:")[0]
        #expect(try ScenarioLoader.load(text: withoutBlock, file: "pub.yaml").variants.count == 2)
        let first = try Self.error("published: yes\n" + withoutBlock)
        #expect(first.line == 1 && first.field == "published" && first.message.contains("Profiles/evidence/"))
    }
}
