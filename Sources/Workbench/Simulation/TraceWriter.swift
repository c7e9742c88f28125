import Foundation
import Synchronization

/// Writes a simulated run's trace as JSON Lines (Docs/simulation.md "Traces"): per variant a header line
/// `{"format":"ambar-trace","version":1,...}`, then one ``TraceRecord`` per line.
public final class TraceWriter: Sendable {
    private let handle: FileHandle
    private let lock = Mutex(())

    /// Creates (or truncates) `url`.
    public init(url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = FileHandle(forWritingAtPath: url.path) else {
            throw WorkbenchError(.badInput, "cannot write the trace file \(url.path)")
        }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The header line of one variant.
    public func begin(_ scenario: Scenario) {
        let header: [String: String] = [
            "format": "ambar-trace", "version": String(TraceRecord.formatVersion), "scenario": scenario.name, "variant": scenario.variantName,
            "repetition": String(scenario.repetition), "seed": String(scenario.seed), "profile": scenario.profile,
        ]
        write(Self.line(header))
    }

    public func record(_ record: TraceRecord) { write(Self.line(record)) }

    private func write(_ data: Data) {
        lock.withLock { _ in
            handle.write(data)
            handle.write(Data("\n".utf8))
        }
    }

    static func line(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data()
    }
}
