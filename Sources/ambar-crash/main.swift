// The kill tests: `ambar-crash harness` runs trials of `ambar-crash child`, which imports and edits
// through AmbarContainer and journals every acknowledged save, killed with SIGKILL at a seeded moment.
//
//   ambar-crash harness [--trials N] [--seed S] [--max-delay-ms M] [--work-directory DIR] [--generation-items I]
//                       [--progress-every P]
//     Progress goes to stderr: on a terminal one line rewritten after every trial, otherwise a line every P
//     trials (default 10; 0 for none). A fresh store starts once one holds I items (default 5000), so each trial's
//     check reads a bounded store.
//   ambar-crash child --directory DIR --journal FILE --seed S
//   ambar-crash probe --directory DIR [--uid UID]   open and save once (as UID when root); 0 saved, 2 refused
//   ambar-crash migrate-harness [--trials N] [--rows R] [--seed S] [--max-delay-ms M]   (Migration.swift: M is
//     how far into a step's work a kill may land, default 5)
import Ambar
import Foundation
import ObjectGraph

func option(_ name: String, in arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

func executablePath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

func runChild(_ arguments: [String]) throws -> Never {
    guard let directory = option("--directory", in: arguments), let journalPath = option("--journal", in: arguments) else {
        throw CrashToolError("child needs --directory and --journal")
    }
    var rng = SeededGenerator(seed: option("--seed", in: arguments).flatMap { UInt64($0) } ?? 1)
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

func runProbe(_ arguments: [String]) -> Int32 {
    guard let directory = option("--directory", in: arguments) else { return 3 }
    if let uid = option("--uid", in: arguments).flatMap({ UInt32($0) }), getuid() == 0 {
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

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "child":
        try runChild(arguments)
    case "probe":
        exit(runProbe(arguments))
    case "migrate-child":
        try runMigrateChild(arguments)
    case "migrate-harness":
        var harness = MigrationHarness(executable: executablePath())
        if let n = option("--trials", in: arguments).flatMap({ Int($0) }) { harness.trials = max(1, n) }
        if let r = option("--rows", in: arguments).flatMap({ Int($0) }) { harness.rows = max(1, r) }
        if let s = option("--seed", in: arguments).flatMap({ UInt64($0) }) { harness.seed = s }
        if let m = option("--max-delay-ms", in: arguments).flatMap({ Int($0) }) { harness.maxDelayMilliseconds = m }
        let figures = try harness.run { done, figures in
            if done % 5 == 0 || done == harness.trials {
                FileHandle.standardError.write(Data("migrate-crash-test: \(done)/\(harness.trials) trials, \(figures.failures.count) failures\n".utf8))
            }
        }
        for failure in figures.failures { FileHandle.standardError.write(Data((failure + "\n").utf8)) }
        print(figures.summary)
        exit(figures.failures.isEmpty ? 0 : 1)
    case "harness":
        var harness = Harness(executable: executablePath())
        if let n = option("--trials", in: arguments).flatMap({ Int($0) }) { harness.trials = max(1, n) }
        if let s = option("--seed", in: arguments).flatMap({ UInt64($0) }) { harness.seed = s }
        if let m = option("--max-delay-ms", in: arguments).flatMap({ Int($0) }) { harness.maxDelayMilliseconds = m }
        harness.workDirectory = option("--work-directory", in: arguments).map { URL(fileURLWithPath: $0) }
        if let g = option("--generation-items", in: arguments).flatMap({ Int($0) }) { harness.generationItems = max(1, g) }
        let every = option("--progress-every", in: arguments).flatMap { Int($0) } ?? 10
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
        for failure in figures.failures { FileHandle.standardError.write(Data((failure + "\n").utf8)) }
        print(figures.summary)
        exit(figures.failures.isEmpty ? 0 : 1)
    default:
        FileHandle.standardError.write(Data("usage: ambar-crash harness [--trials N] [--seed S] [--max-delay-ms M] [--generation-items I] [--progress-every P] | child … | probe …\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("ambar-crash: \(error)\n".utf8))
    exit(3)
}
