import Foundation
import Testing

/// Kill tests (issue 8; semantics §2: a save is one transaction, all or nothing). The quick variant of
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
}
