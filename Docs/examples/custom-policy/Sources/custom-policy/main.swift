import CustomPolicy
import Foundation
import Workbench

// Register the app's policy and model, then run a scenario that names them through the workbench's runner and
// reports, as `ambar-bench run` would. Simulated runs read their cost profile from the repository's Profiles/
// (`make example` sets AMBAR_PROFILE_PATH).
registerShop()
do {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("shop-prices.yaml")
    try shopScenario.write(to: file, atomically: true, encoding: .utf8)
    var options = Suite.Options()
    options.reportsRoot = URL(fileURLWithPath: "Reports", isDirectory: true)
    for outcome in try Suite.run(files: [file.path], options: options) {
        print("report: \(outcome.folder.path)/report.html")
        for r in outcome.results {
            print("\(r.variant): oracle \(r.oracle.verdict), \(r.oracle.summary)")
        }
    }
    print("conflicts the keepPrices policy settled: \(PriceKeepingPolicy.conflictsSettled.withLock { $0 })")
} catch {
    FileHandle.standardError.write(Data("custom-policy: \(error)\n".utf8))
    exit(2)
}
