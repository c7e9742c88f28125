import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// The workbench as a library: a package registers its merge policy and model under names its
/// scenarios use. `ExampleShopPolicy.swift` is the example package's own source (a link to
/// Docs/examples/custom-policy/Sources/CustomPolicy/ShopPolicy.swift), compiled and run here; `make example` builds
/// the whole example package against the repository and runs it.
@Suite("The workbench as a library: registered policies and models", .serialized)
struct WorkbenchRegistryTests {
    @Test("The example's registered policy and model run a scenario through the runner; the oracle holds the policy to its type's promises")
    func examplePolicyAndModelRun() throws {
        registerShop()
        let loaded = try ScenarioLoader.load(text: shopScenario, file: "shop-prices.yaml")
        let scenario = try #require(loaded.variants.first)
        #expect(scenario.model.name == "shop" && scenario.model.entity == "Product" && scenario.model.idKey == "id")
        let before = PriceKeepingPolicy.conflictsSettled.withLock { $0 }
        let r = try runVariant(scenario)
        #expect(r.policies["view"] == "keepPrices")
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
        // 200 seeded products, then 400 imported of which 80% update existing ones.
        #expect(r.counters["rowsInserted"] == 200 + 80)
        // The view context's saves met the importers' updates, and the app's policy settled them.
        let settled = PriceKeepingPolicy.conflictsSettled.withLock { $0 } - before
        #expect(settled > 0)
        #expect((r.value("conflicts", "count", label: "outcome:view:keepPrices") ?? 0) > 0)
        // A registered StoreTrump subclass promises what StoreTrump does.
        #expect(Registry.promisesLosses("keepPrices") && !Registry.promisesLosses("objectTrump"))
    }

    @Test("An unregistered policy or model name is bad input naming the names there are")
    func unknownNames() throws {
        registerShop()
        for (text, expected) in [
            (shopScenario.replacingOccurrences(of: "mergePolicy: keepPrices", with: "mergePolicy: keepPrice"), "expected a merge policy (error, storeTrump, objectTrump, overwrite, rollback, keepPrices)"),
            (shopScenario.replacingOccurrences(of: "name: shop,", with: "name: shops,"), "expected a model name (workload, shop)"),
        ] {
            do {
                _ = try ScenarioLoader.load(text: text, file: "shop.yaml")
                Issue.record("accepted: \(expected)")
            } catch let error as ScenarioError {
                #expect(error.description.contains(expected), "\(error.description)")
            }
        }
    }
}
