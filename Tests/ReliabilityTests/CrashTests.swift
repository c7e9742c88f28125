import Foundation
import Testing

/// Kill tests (semantics §2: a save is one transaction, all or nothing). The quick variant of
/// `make crash-test`: `ambar-crash harness` kills its child with SIGKILL at seeded moments and checks the store.
@Suite struct CrashTests {
    /// The `ambar-crash` tool built beside the test bundle.
    static var tool: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("ambar-crash")
    }

    /// Runs the tool and returns its status and output.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, out, err)
    }

    static func figure(_ name: String, in summary: String) -> Int? {
        summary.split(separator: " ").first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
    }

    @Test func acknowledgedSavesSurviveSIGKILLWhole() throws {
        let trials = ReliabilitySettings.integer("TRIALS", default: 10)
        let result = try Self.run(["harness", "--trials", String(trials), "--seed", "8"])
        print(result.output, result.errors)
        #expect(result.status == 0, "\(result.errors)")
        let summary = result.output
        #expect(Self.figure("trials", in: summary) == trials)
        #expect(Self.figure("lost", in: summary) == 0)
        #expect(Self.figure("partial", in: summary) == 0)
        #expect(Self.figure("integrityFailures", in: summary) == 0)
        #expect(Self.figure("continued", in: summary) == trials)
        // Not vacuous: saves were acknowledged before the kills.
        #expect((Self.figure("acknowledgedSaves", in: summary) ?? 0) > trials)
    }

    /// `make crash-test` grew with the square of its trials, because every check reads the whole
    /// store and journal, and one store took every trial's saves. A fresh store starts once one holds
    /// `--generation-items` items, so the store a trial starts from stays below that however many trials run,
    /// while every acknowledged save of it is still verified after each kill. Asserted on the harness's work
    /// counters, not on time: the items a trial starts from stay below the bound, several stores were used, and
    /// they took more items in all than one trial may start from (one store would have carried them all).
    @Test("crash-test work per trial is bounded (a fresh store past --generation-items), with progress")
    func crashTestWorkPerTrialIsBounded() throws {
        let trials = 8, bound = 40
        let result = try Self.run(["harness", "--trials", String(trials), "--seed", "8", "--max-delay-ms", "100",
                                   "--generation-items", String(bound), "--progress-every", "4"])
        #expect(result.status == 0, "\(result.errors)")
        let summary = result.output
        #expect(Self.figure("trials", in: summary) == trials)
        #expect(Self.figure("lost", in: summary) == 0)
        #expect(Self.figure("partial", in: summary) == 0)
        #expect(Self.figure("integrityFailures", in: summary) == 0)
        // Each check verifies every acknowledged save of its store, so every save was verified at least once.
        let acknowledged = try #require(Self.figure("acknowledgedSaves", in: summary))
        #expect(acknowledged >= trials)  // each trial's continuation is an acknowledged save
        #expect((Self.figure("acknowledgedChecks", in: summary) ?? 0) >= acknowledged)
        // The bound holds whatever the trial count: no trial starts from a store holding `bound` items or more.
        let carried = try #require(Self.figure("maxCarriedItems", in: summary))
        #expect(carried < bound)
        // Not vacuous: the run outgrew one store (the continuations alone insert a seeded 0-40 items per trial).
        #expect((Self.figure("generations", in: summary) ?? 0) >= 2)
        #expect((Self.figure("itemsWritten", in: summary) ?? 0) > bound)
        // Progress: a line every 4 trials on stderr (not a terminal here), with failures and elapsed time.
        let lines = result.errors.split(separator: "\n").filter { $0.hasPrefix("crash-test: ") }
        #expect(lines.count == 2, "\(result.errors)")
        #expect(lines.first?.contains("4/8 trials, 0 failures") == true)
        #expect(lines.last?.contains("8/8 trials, 0 failures") == true)
        #expect(lines.allSatisfy { $0.contains("s elapsed") })
    }

    // Docs/coredata-behaviour.md §7: a lightweight migration is one SQLite transaction, so a kill at any moment
    // leaves the previous version's store whole or the next version's whole; the next open finishes the migration.
    // The harness picks each kill's point in the migration (not a wall-clock delay), so the split is the seed's.
    @Test("A migration killed with SIGKILL leaves the previous or the next version whole, never half")
    func migrationSurvivesSIGKILL() throws {
        var result = try Self.run(["migrate-harness", "--trials", "8", "--rows", "3000", "--seed", "5"])
        result.output = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(result.status == 0, "\(result.output) \(result.errors)")
        #expect(Self.figure("trials", in: result.output) == 8)
        #expect(Self.figure("failures", in: result.output) == 0)
        // Each trial left the version its kill point says: before the commit the previous, after it the next.
        #expect(Self.figure("killedAsChosen", in: result.output) == 8)
        let previous = Self.figure("previousVersionWhole", in: result.output) ?? 0, next = Self.figure("nextVersionWhole", in: result.output) ?? 0
        #expect(previous + next == 8)
        // Seven points in turn: the first seven trials reach every one, so kills land on both sides of the commit.
        #expect(previous >= 6 && next >= 1, "\(result.output)")
    }
}
