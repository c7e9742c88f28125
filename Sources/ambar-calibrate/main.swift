// ambar-calibrate: replays operation traces (written by `ambar-bench run --operation-trace`) through Apple's Core
// Data, measures each step, and writes the diff of counts against the traced run and a fitted cost profile
// (Docs/calibration.md). NEVER COMPILED OR RUN HERE: on Linux it only says that it needs Apple's Core Data.
#if canImport(CoreData)
import CoreData
import Foundation
import TraceReplay
import TraceReplayCoreData

let usage = """
    usage: ambar-calibrate TRACE.jsonl... --out DIR [--device NAME] [--os NAME] [--fallback PROFILE.yaml]
      Replays each trace through Core Data (a fresh store per trace in DIR/stores), then writes in DIR:
        <trace>.diff.csv, <trace>.diff.json   the run's counts beside Core Data's, overall and per step
        <trace>.steps.csv                     each step's time, main-thread time, SQL, notifications, registered objects
        <device>.yaml                         the cost profile fitted to every trace's steps (Profiles/README.md)
        summary.txt                           what was replayed, what Core Data could not express, what the fit could not determine
      --fallback names a profile whose figures fill the operations the fit cannot determine (marked as estimates).
      Exit status: 0 written, 1 a replay failed, 2 bad arguments.
    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

func hardwareModel() -> String {
    var size = 0
    sysctlbyname("hw.model", nil, &size, nil, 0)
    var bytes = [CChar](repeating: 0, count: max(size, 1))
    sysctlbyname("hw.model", &bytes, &size, nil, 0)
    return String(cString: bytes)
}

/// What the command line asked for.
struct Config: Sendable {
    var traces: [String] = []
    var out: URL
    var device: String
    var os: String
    var fallbackPath: String?
}

func parseArguments() -> Config {
    var traces: [String] = []
    var out: String?
    var device = hardwareModel()
    var osName = ProcessInfo.processInfo.operatingSystemVersionString
    #if os(macOS)
    osName = "macOS " + osName
    #elseif os(iOS)
    osName = "iOS " + osName
    #endif
    var fallbackPath: String?
    var arguments = CommandLine.arguments.dropFirst()
    while let a = arguments.popFirst() {
        switch a {
        case "--out": out = arguments.popFirst()
        case "--device": device = arguments.popFirst() ?? device
        case "--os": osName = arguments.popFirst() ?? osName
        case "--fallback": fallbackPath = arguments.popFirst()
        case "-h", "--help": print(usage); exit(0)
        default:
            if a.hasPrefix("-") { fail("unknown option \(a)\n\(usage)", status: 2) }
            traces.append(a)
        }
    }
    guard let out, !traces.isEmpty else { fail(usage, status: 2) }
    return Config(traces: traces, out: URL(fileURLWithPath: out, isDirectory: true), device: device, os: osName, fallbackPath: fallbackPath)
}

/// Replays every trace, writes the outputs; returns the exit status. Runs on a thread of its own.
func calibrate(_ config: Config, log: SQLLogCapture, clock: MainThreadClock) -> Int32 {
    let (outURL, device, os, traces) = (config.out, config.device, config.os, config.traces)
    var status: Int32 = 0
    var samples: [ProfileFit.Sample] = []
    var summary = "ambar-calibrate on \(device), \(os)\n"
    var operations: [String] = []
    var fallback: (name: String, costs: [String: Double])?
    do {
        try FileManager.default.createDirectory(at: outURL, withIntermediateDirectories: true)
        if let fallbackPath = config.fallbackPath {
            let text = try String(contentsOfFile: fallbackPath, encoding: .utf8)
            let figures = ProfileFit.figures(inProfile: text)
            guard !figures.isEmpty else { fail("\(fallbackPath): no figures read (expected lines `  name: { ns: N, ... }`)", status: 2) }
            operations = figures.map(\.name)
            fallback = (URL(fileURLWithPath: fallbackPath).deletingPathExtension().lastPathComponent, Dictionary(figures.map { ($0.name, $0.ns) }, uniquingKeysWith: { a, _ in a }))
        }
        for path in traces {
            let (header, records) = try TraceCoding.read(URL(fileURLWithPath: path))
            let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            let stores = outURL.appendingPathComponent("stores/\(name)", isDirectory: true)
            try? FileManager.default.removeItem(at: stores)
            try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
            do {
                let outcome = try CoreDataCalibration.replay(header: header, records: records, directory: stores, log: log, clock: clock)
                let document = CalibrationReport.diff(records: records, steps: outcome.steps, ours: "ObjectGraph simulated run (\(header.scenario) \(header.variant), seed \(header.seed))",
                                                      theirs: "Core Data on \(device), \(os)")
                try Data(CountDiff.csv(document.overall + document.steps).utf8).write(to: outURL.appendingPathComponent("\(name).diff.csv"))
                try CountDiff.json(document).write(to: outURL.appendingPathComponent("\(name).diff.json"))
                try Data(CalibrationReport.stepsCSV(outcome.steps).utf8).write(to: outURL.appendingPathComponent("\(name).steps.csv"))
                samples += CalibrationReport.samples(records: records, steps: outcome.steps)
                summary += "\n\(path): \(outcome.steps.count) steps replayed\n"
                for row in document.overall { summary += "  \(row.counter): ours \(row.ours), Core Data \(row.theirs)\n" }
                if outcome.stepsWithoutLog > 0 { summary += "  WARNING: the SQL debug log of \(outcome.stepsWithoutLog) steps never reached the pipe; the SQL counts are missing\n" }
                for d in outcome.divergences.prefix(20) { summary += "  divergence: \(d)\n" }
                for u in outcome.unexpressed { summary += "  not expressed: \(u)\n" }
            } catch {
                status = 1
                summary += "\n\(path): the replay failed: \(error)\n"
            }
        }
        if operations.isEmpty {
            operations = Array(Set(samples.flatMap { $0.counts.keys }.filter { !$0.contains("[") })).sorted()
        }
        let fit = ProfileFit.fit(samples, operations: operations)
        let fileName = device.replacingOccurrences(of: " ", with: "-").replacingOccurrences(of: ",", with: "-")
        let yaml = ProfileFit.yaml(fit, operations: operations, device: device, os: os, traces: traces.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", "), fallback: fallback)
        try Data(yaml.utf8).write(to: outURL.appendingPathComponent("\(fileName).yaml"))
        summary += "\nprofile \(fileName).yaml: \(fit.steps) steps fitted, relative residual \(fit.relativeResidual)\n"
        for op in operations { if case .undetermined(let why)? = fit.figures[op] { summary += "  not determined: \(op): \(why)\n" } }
        try Data(summary.utf8).write(to: outURL.appendingPathComponent("summary.txt"))
        print(summary)
    } catch {
        print("ambar-calibrate: \(error)")
        status = 1
    }
    return status
}

let config = parseArguments()
let clock = MainThreadClock()
let log: SQLLogCapture
do { log = try SQLLogCapture() } catch { fail("ambar-calibrate: \(error)", status: 2) }
let worker = Thread { [config, log, clock] in exit(calibrate(config, log: log, clock: clock)) }
worker.stackSize = 8 << 20
worker.start()
// The main thread serves main-queue contexts until the worker exits the process.
dispatchMain()
#else
import Foundation

FileHandle.standardError.write(Data("ambar-calibrate needs Apple's Core Data (macOS or iOS); on this platform it does nothing. See Docs/calibration.md.\n".utf8))
exit(2)
#endif
