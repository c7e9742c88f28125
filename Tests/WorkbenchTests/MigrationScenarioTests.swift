import Foundation
import Testing
@testable import Workbench

/// The workbench's migrator: a store made with one model version opened with the next.
@Suite("Lightweight migration in a scenario")
struct MigrationScenarioTests {
    static let yaml = """
        name: mig
        seed: 3
        stack:
          topology: headless
        phases:
          - name: seed
            actors:
              - importer: { objects: 400, chunkSize: 100 }
          - name: migrate
            actors:
              - migrator: {}
          - name: verify
        """

    @Test("The migrator migrates every row; its time is the profile's cost of the rows copied (exact in simulated mode)")
    func migratesAndMeasures() throws {
        let loaded = try ScenarioLoader.load(text: Self.yaml, file: "mig.yaml")
        let first = try runVariant(loaded.variants[0])
        let again = try runVariant(loaded.variants[0])
        #expect(first.value("rowsMigrated", "value") == 400)
        #expect(first.value("costedOperations", "count", label: "rowMigrated") == 400)
        let time = try #require(first.value("migrationTime", "value"))
        // At least the profile's price of the 400 rows copied (milliseconds).
        let perRow = Double(try CostProfile.load(Scenario.defaultProfile).cost(.rowMigrated)) / 1e6
        #expect(time >= 400 * perRow && perRow > 0)
        #expect(again.value("migrationTime", "value") == time)  // virtual time: the same on every run
        #expect(first.oracle.verdict == .pass && first.notes.isEmpty, "\(first.oracle.summary) \(first.notes)")
    }

    @Test("A migration Core Data cannot infer, a next version without the keys, or a migrator not alone is refused before anything runs")
    func refusedBeforeRunning() throws {
        func error(_ text: String) -> String {
            do {
                _ = try ScenarioLoader.load(text: text, file: "mig.yaml")
                return ""
            } catch { return "\(error)" }
        }
        let typeChange = Self.yaml.replacingOccurrences(of: "- migrator: {}", with: """
            - migrator:
                      entities:
                        - name: Record
                          attributes:
                            - { name: id, type: integer64 }
                            - { name: title, type: integer64 }
                            - { name: value, type: double }
                            - { name: counter, type: integer64 }
                            - { name: updatedAt, type: date }
            """)
        let e1 = error(typeChange)
        #expect(e1.contains("mig.yaml:") && e1.contains("phases.migrate.migrator") && e1.contains("Core Data cannot infer this migration") && e1.contains("title"), "\(e1)")
        let noKey = typeChange.replacingOccurrences(of: "{ name: title, type: integer64 }", with: "{ name: headline, type: string, renamingIdentifier: title }")
        let e2 = error(noKey)
        #expect(e2.contains("has no attribute 'title'"), "\(e2)")
        // A next version that stores the same tables: nothing to migrate, refused (an inline model here).
        let inline = """
            name: same
            model:
              entity: Item
              entities:
                - name: Item
                  attributes:
                    - { name: id, type: integer64 }
                    - { name: title, type: string }
            stack:
              topology: headless
            phases:
              - name: seed
                actors:
                  - importer: { objects: 10 }
              - name: migrate
                actors:
                  - migrator:
                      entities:
                        - name: Item
                          attributes:
                            - { name: id, type: integer64 }
                            - { name: title, type: string, optional: false, defaultValue: "" }
              - name: verify
            """
        #expect(error(inline).contains("nothing to migrate"), "\(error(inline))")
        let notAlone = Self.yaml.replacingOccurrences(of: "- migrator: {}", with: "- migrator: {}\n      - importer: { objects: 10 }")
        #expect(error(notAlone).contains("a migrator runs alone"), "\(error(notAlone))")
        // The renamed attribute is a mapping Core Data infers: the loader accepts it when the keys survive.
        let renamed = noKey.replacingOccurrences(of: "{ name: id, type: integer64 }", with: "{ name: id, type: integer64 }\n                - { name: title, type: string }")
        #expect(error(renamed).contains("more than one") || error(renamed).isEmpty || error(renamed).contains("renam"), "\(error(renamed))")
    }

    @Test("The shipped migration scenario validates")
    func shippedScenario() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let loaded = try ScenarioLoader.load(file: root.appendingPathComponent("Scenarios/migration.yaml").path)
        #expect(loaded.variants.count == 3)
    }
}
