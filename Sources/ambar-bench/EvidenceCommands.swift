import ArgumentParser
import Foundation
import Workbench

/// `ambar-bench evidence`: every published measurement of Profiles/evidence/ replayed under its device's profile.
struct Evidence: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay the published Core Data measurements (Profiles/evidence/) under the shipped profiles: published, ours, ratio, within 2×, direction, for the fit entries and the checks apart, then leave-one-out.",
        discussion: "Profiles/README.md \"Evidence\" and \"How the fit works\". Each entry runs under its device's profile (Profiles/<device>.yaml), or the default profile when its device has none. Findings, not failures: the exit code is 0 unless something could not run.")
    @Option(name: .long, help: "The evidence folder, relative to the repository.") var evidence = "Profiles/evidence"
    @Flag(name: .long, help: "Only the timed entries: skip the memory checks (the long ones).") var timedOnly = false
    @Flag(name: .long, help: "Print each run as it starts.") var progress = false

    func run() throws {
        try guarded {
            let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            let fit = try EvidenceFit(root: root, evidence: evidence, progress: progressPrinter(progress))
            var profiles: [String: CostProfile] = [:]
            for device in Set(fit.entries.map(\.device) + [fit.plan.defaultProfile]).sorted() {
                // A device without a profile file is judged under the default (the table names it); a file that
                // does not load is an error.
                if let p = try CostProfile.loadIfPresent(device, root: root) { profiles[device] = p }
            }
            let judgements = try fit.judge(profiles: profiles, timedOnly: timedOnly)
            for j in judgements {
                print(j.role == .fit ? "== Fit entries: what the shipped profiles were fitted to" : "== Checks: never fitted")
                print(EvidenceFit.text(j))
                print("")
            }
            let points = try fit.fitPoints()
            print("== Leave-one-out: each fit entry predicted by a fit made without it")
            print(EvidenceFit.text(fit.leaveOneOut(points), units: fit.figureUnits))
            print("")
            print("== The fit as the evidence gives it now (ambar-bench fit writes it)")
            for deviceFit in fit.fitDevices(points) { print(fit.text(deviceFit)) }
            print("")
            print("== Profiles used")
            for (name, p) in profiles.sorted(by: { $0.key < $1.key }) {
                print("\(name): \(p.description)")
                if let evidence = p.evidence, !evidence.isEmpty { print("  evidence: \(evidence)") }
            }
            return 0
        }
    }
}

/// The evidence mode of `ambar-bench fit`: fits every device with `fit` entries and writes its profile and the
/// derived ones to `out`, all or none (a profile that would not load stops the fit before anything is written).
func fitToEvidence(evidence: String, out: String, dryRun: Bool, progress: Bool) throws -> Int32 {
    let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
    let fit = try EvidenceFit(root: root, evidence: evidence, progress: progressPrinter(progress))
    let fits = fit.fitDevices(try fit.fitPoints())
    for deviceFit in fits { print(fit.text(deviceFit)) }
    let files = try fit.profileFiles(fits)
    let folder = URL(fileURLWithPath: out, isDirectory: true)
    if dryRun {
        for file in files { print("would write \(folder.appendingPathComponent("\(file.name).yaml").path)") }
        return 0
    }
    for url in try EvidenceFit.write(files, to: folder) { print("profile: \(url.path)") }
    return 0
}

/// Progress lines on stderr when asked for or when stderr is a terminal.
func progressPrinter(_ asked: Bool) -> (@Sendable (String) -> Void)? {
    guard asked || isTerminal else { return nil }
    return { line in stderr("  " + line) }
}
