// `ambar-crash`: the kill tests of Docs/reliability.md. `harness` runs trials of `child`, which imports and edits
// through AmbarContainer and journals every acknowledged save, killed with SIGKILL at a seeded moment;
// `migrate-harness` kills `migrate-child` at each point of a lightweight migration; `probe` opens a store and saves
// once (StoreFaultTests). `child` and `migrate-child` are started by the harnesses, with exactly the arguments
// `Harness` and `MigrationHarness` pass, and are left out of the help.
import Ambar
import ArgumentParser
import CommandShell
import Foundation
import ObjectGraph
import SeededRandom

/// The tool. Exit codes: `harness` and `migrate-harness` 0 every trial passed, 1 a trial failed, 2 bad input
/// (nothing ran), 3 an internal or I/O failure; `probe` 0 saved, 2 the save was refused, 3 bad input or failure.
struct AmbarCrash: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ambar-crash",
        abstract: "Kill tests: processes killed with SIGKILL in the middle of saves and of migrations, the store checked after each kill.",
        discussion: """
            Exit codes: harness and migrate-harness: 0 every trial passed, 1 a trial failed (each failure on stderr, the summary on stdout), 2 bad input (nothing ran), 3 an internal or I/O failure. probe: 0 saved, 2 the save was refused, 3 bad input or a failure before the save.

            Documentation, in the repository: Docs/reliability.md (what a trial does and checks, the summary's figures, generations of stores, the migration kill points, and `make crash-test`).
            """,
        subcommands: [HarnessCommand.self, MigrateHarnessCommand.self, ProbeCommand.self, ChildCommand.self, MigrateChildCommand.self])

    /// Names no subcommand: bad input, as an unknown one is.
    func run() throws {
        throw ValidationError("name a subcommand: harness, migrate-harness or probe")
    }

    /// The subcommands whose exit code 2 means something else (`probe`: refused), so their bad input exits 3.
    static let internalModes: Set = ["child", "probe", "migrate-child"]

    /// ArgumentParser's own main, except that a command-line mistake is bad input: exit code 2 (3 for the
    /// internal modes), not sysexits' 64.
    static func main() {
        main(badInputExitCode: internalModes.contains(CommandLine.arguments.dropFirst().first ?? "") ? 3 : 2, reportingTo: standardError)
    }
}

/// Runs a subcommand's work: a failure prints `ambar-crash: <error>` and exits 3; its own exit codes pass.
func internalFailuresExit3(_ body: () throws -> Void) throws {
    do { try body() } catch let error as ExitCode { throw error } catch {
        standardError("ambar-crash: \(error)")
        throw ExitCode(3)
    }
}

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

func executablePath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

struct HarnessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "harness",
        abstract: "Run trials of a child that imports and edits, each killed with SIGKILL at a seeded moment, and check the store after each kill.",
        discussion: """
            Prints one summary line of figures (trials=, acknowledgedSaves=, lost=, partial=, integrityFailures=, ...) on stdout and each failure on stderr. Progress goes to stderr: on a terminal one line rewritten after every trial, otherwise a line every --progress-every trials. What each trial checks, and why a fresh store starts past --generation-items: Docs/reliability.md.
            """)

    @Option(help: ArgumentHelp("Trials to run (default 100, at least 1).", valueName: "N")) var trials: Int?
    @Option(help: ArgumentHelp("The seed of the children's workloads and of the kill delays (default 1).", valueName: "S"))
    var seed: UInt64?
    @Option(name: .customLong("max-delay-ms"), help: ArgumentHelp("A kill lands 0 to M ms after the child starts (default 300).", valueName: "M"))
    var maxDelayMilliseconds: Int?
    @Option(help: ArgumentHelp("Where the stores and journals go (default: a fresh temporary directory).", valueName: "DIR"))
    var workDirectory: String?
    @Option(help: ArgumentHelp("A fresh store starts once one holds I items (default 5000, at least 1), so each trial's check reads a bounded store.", valueName: "I"))
    var generationItems: Int?
    @Option(help: ArgumentHelp("When stderr is not a terminal, a progress line every P trials (0 for none).", valueName: "P"))
    var progressEvery = 10

    func run() throws { try internalFailuresExit3(runHarness) }

    func runHarness() throws {
        var harness = Harness(executable: executablePath())
        if let trials { harness.trials = max(1, trials) }
        if let seed { harness.seed = seed }
        if let maxDelayMilliseconds { harness.maxDelayMilliseconds = maxDelayMilliseconds }
        harness.workDirectory = workDirectory.map { URL(fileURLWithPath: $0) }
        if let generationItems { harness.generationItems = max(1, generationItems) }
        let every = progressEvery
        let terminal = isatty(STDERR_FILENO) == 1
        let started = Date()
        let total = harness.trials
        harness.progress = { done, figures in
            guard terminal || (every > 0 && (done % every == 0 || done == total)) else { return }
            let elapsed = Date().timeIntervalSince(started)
            let eta = elapsed / Double(done) * Double(total - done)
            let line = String(format: "crash-test: %d/%d trials, %d failures, %.0fs elapsed, ETA %.0fs (store %d)",
                              done, total, figures.failures.count, elapsed, eta, figures.generations)
            FileHandle.standardError.write(Data((terminal ? "\r\(line)\u{1B}[K" + (done == total ? "\n" : "") : line + "\n").utf8))
        }
        let figures = try harness.run()
        for failure in figures.failures { standardError(failure) }
        print(figures.summary)
        if !figures.failures.isEmpty { throw ExitCode(1) }
    }
}

struct MigrateHarnessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-harness",
        abstract: "Run trials of a lightweight migration killed with SIGKILL at a chosen point, and check that the previous or the next version is whole.",
        discussion: "Prints one summary line (trials=, previousVersionWhole=, nextVersionWhole=, killedAsChosen=, failures=) on stdout and progress every 5 trials on stderr. The kill points: Docs/reliability.md.")

    @Option(help: ArgumentHelp("Trials to run (default 20, at least 1).", valueName: "N")) var trials: Int?
    @Option(help: ArgumentHelp("Rows in the store each trial migrates (default 20000, at least 1).", valueName: "R")) var rows: Int?
    @Option(help: ArgumentHelp("The seed of the kill points and delays (default 1).", valueName: "S")) var seed: UInt64?
    @Option(name: .customLong("max-delay-ms"), help: ArgumentHelp("How far into a step's work a kill may land, in ms (default 5).", valueName: "M"))
    var maxDelayMilliseconds: Int?

    func run() throws { try internalFailuresExit3(runHarness) }

    func runHarness() throws {
        var harness = MigrationHarness(executable: executablePath())
        if let trials { harness.trials = max(1, trials) }
        if let rows { harness.rows = max(1, rows) }
        if let seed { harness.seed = seed }
        if let maxDelayMilliseconds { harness.maxDelayMilliseconds = maxDelayMilliseconds }
        let total = harness.trials
        let figures = try harness.run { done, figures in
            if done % 5 == 0 || done == total {
                standardError("migrate-crash-test: \(done)/\(total) trials, \(figures.failures.count) failures")
            }
        }
        for failure in figures.failures { standardError(failure) }
        print(figures.summary)
        if !figures.failures.isEmpty { throw ExitCode(1) }
    }
}

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Open the store in a directory and save once; exit 0 saved, 2 refused, 3 bad input or failure.",
        discussion: "Run as root with --uid, it drops to that user first, since root ignores directory permissions.")

    @Option(help: ArgumentHelp("The directory holding the store.", valueName: "DIR")) var directory: String
    @Option(help: ArgumentHelp("The user to run as, when started as root.", valueName: "UID")) var uid: UInt32?

    func run() throws {
        let code = runProbe(directory: directory, uid: uid)
        if code != 0 { throw ExitCode(code) }
    }
}

/// Started by `harness` as `child --directory DIR --journal FILE --seed S`; runs until killed.
struct ChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "child", abstract: "Import and edit until killed, journaling every save (started by harness).",
        shouldDisplay: false)

    @Option var directory: String
    @Option var journal: String
    @Option var seed: UInt64 = 1

    func run() throws {
        try internalFailuresExit3 { try runChild(directory: directory, journalPath: journal, seed: seed) }
    }
}

/// Started by `migrate-harness` as `migrate-child --store FILE`; stops at each migration point (Migration.swift).
struct MigrateChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-child", abstract: "Migrate a store, pausing at each point (started by migrate-harness).",
        shouldDisplay: false)

    @Option var store: String

    func run() throws {
        try internalFailuresExit3 { try runMigrateChild(store: store) }
    }
}

func runChild(directory: String, journalPath: String, seed: UInt64) throws -> Never {
    var rng = SeededGenerator(seed: seed)
    let queue = ContextQueue(label: "crash.child.main")
    let container = try Workload.openContainer(directory: URL(fileURLWithPath: directory), mainQueue: queue)
    let journal = try Journal(path: journalPath)
    // Runs until killed; the bound only keeps a forgotten child from running forever.
    for _ in 0..<1_000_000 {
        let roll = Int.random(in: 0..<10, using: &rng)
        let kind: Workload.Kind = roll < 6 ? .importer : (roll < 8 ? .temporary : .editor)
        try Workload.save(kind: kind, container: container, mainQueue: queue, journal: journal, rng: &rng)
    }
    exit(0)
}

func runProbe(directory: String, uid: UInt32?) -> Int32 {
    if let uid, getuid() == 0 {
        guard setgroups(0, nil) == 0, setgid(uid) == 0, setuid(uid) == 0 else {
            print("error: cannot drop privileges to uid \(uid)")
            return 3
        }
    }
    do {
        let queue = ContextQueue(label: "crash.probe.main")
        let container = try Workload.openContainer(directory: URL(fileURLWithPath: directory), mainQueue: queue)
        var rng = SeededGenerator(seed: 7)
        try Workload.save(kind: .importer, container: container, mainQueue: queue, journal: nil, rng: &rng)
        print("saved")
        return 0
    } catch {
        print("error: \(error)")
        return 2
    }
}

AmbarCrash.main()
