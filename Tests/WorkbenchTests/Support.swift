import Foundation
import Synchronization
import Testing
@testable import Workbench

/// The test bundle's fixtures (Tests/WorkbenchTests/Fixtures, copied as a resource).
enum Fixtures {
    static var folder: URL { Bundle.module.resourceURL!.appendingPathComponent("Fixtures", isDirectory: true) }
    static func url(_ name: String) -> URL { folder.appendingPathComponent(name) }
    static func text(_ name: String) throws -> String { try String(contentsOf: url(name), encoding: .utf8) }

    /// The fixtures folder in the source tree, where `AMBAR_RECORD_GOLDEN=1` writes.
    static func sourceFolder(filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Fixtures", isDirectory: true)
    }
}

/// Compares `actual` with the golden file `Fixtures/golden/<name>`. With `AMBAR_RECORD_GOLDEN=1` in the
/// environment it writes the file in the source tree instead (read the diff before committing it).
func expectGolden(_ actual: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    if ProcessInfo.processInfo.environment["AMBAR_RECORD_GOLDEN"] == "1" {
        let target = Fixtures.sourceFolder().appendingPathComponent("golden").appendingPathComponent(name)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(actual.utf8).write(to: target)
        return
    }
    let expected = try #require(try? Fixtures.text("golden/\(name)"),
                                "no golden file golden/\(name); record it with AMBAR_RECORD_GOLDEN=1", sourceLocation: sourceLocation)
    if actual != expected {
        let a = actual.components(separatedBy: "\n"), e = expected.components(separatedBy: "\n")
        let line = zip(a, e).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, e.count)
        let got = line < a.count ? a[line] : "<end>", want = line < e.count ? e[line] : "<end>"
        Issue.record("\(name) differs from its golden file at line \(line + 1):\n  got:  \(got)\n  want: \(want)\n(re-record with AMBAR_RECORD_GOLDEN=1 if the change is intended)",
                     sourceLocation: sourceLocation)
    }
}

/// A temporary directory removed when the value goes away.
final class TemporaryDirectory: @unchecked Sendable {
    let url: URL
    init(_ label: String = "workbench-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> URL {
        let target = file(name)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: target)
        return target
    }

    /// Every path below the directory, relative, sorted (hidden entries included).
    func tree() -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: url.path) else { return [] }
        return (walker.allObjects as? [String] ?? []).sorted()
    }
}

/// The scenario every run test uses: `Fixtures/tiny.yaml` (a few hundred objects).
func tinyScenario(overrides: [String] = []) throws -> ScenarioLoader.Loaded {
    try ScenarioLoader.load(text: try Fixtures.text("tiny.yaml"), file: "tiny.yaml", overrides: overrides)
}

/// Runs one variant in a temporary work directory.
/// The message `ScenarioLoader` gives for `yaml` read as `file`, or "ok".
func loaderMessage(_ yaml: String, file: String, overrides: [String] = []) -> String {
    do {
        _ = try ScenarioLoader.load(text: yaml, file: file, overrides: overrides)
        return "ok"
    } catch let error as ScenarioError {
        return error.description
    } catch {
        return "unexpected \(type(of: error)): \(error)"
    }
}

func runVariant(_ scenario: Scenario) throws -> VariantResult {
    let work = try TemporaryDirectory("workbench-run")
    return try VariantRunner(scenario: scenario, workDirectory: work.url).run()
}

/// The built `ambar-bench` executable: `$AMBAR_BENCH`, or next to the test bundle in the build folder
/// (`swift build --build-tests` builds the executables too).
func benchExecutable() throws -> URL {
    if let path = ProcessInfo.processInfo.environment["AMBAR_BENCH"] { return URL(fileURLWithPath: path) }
    var candidates: [URL] = []
    if let resources = Bundle.module.resourceURL { candidates.append(resources.deletingLastPathComponent().appendingPathComponent("ambar-bench")) }
    candidates.append(Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("ambar-bench"))
    candidates.append(Bundle.main.bundleURL.appendingPathComponent("ambar-bench"))
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("ambar-bench"))
    let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    return try #require(found, "ambar-bench not found next to the test bundle (\(candidates.map(\.path))); run `swift build --build-tests` first")
}

/// What one `ambar-bench` invocation did.
struct Invocation {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Starts `ambar-bench` with `arguments` in `directory`, its stdout and stderr piped.
func startBench(_ arguments: [String], in directory: URL) throws -> (Process, out: Pipe, err: Pipe) {
    let process = Process()
    process.executableURL = try benchExecutable()
    process.arguments = arguments
    process.currentDirectoryURL = directory
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    return (process, out, err)
}

/// Runs `ambar-bench` with `arguments` in `directory` (stderr is not a terminal: no progress).
func bench(_ arguments: [String], in directory: URL) throws -> Invocation {
    let (process, out, err) = try startBench(arguments, in: directory)
    // Read both pipes while the process runs so neither fills up.
    let errData = Mutex(Data())
    let reader = Thread { errData.withLock { $0 = err.fileHandleForReading.readDataToEndOfFile() } }
    reader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while !reader.isFinished { usleep(1000) }
    return Invocation(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
}
