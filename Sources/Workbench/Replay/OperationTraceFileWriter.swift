import Foundation
import TraceReplay

/// Writes one variant's operation trace (Docs/calibration.md, format `ambar-operations` v1: a header line, then one
/// line per record) to a file as the run makes it, so that a long run's trace is not held in memory. The lines go
/// to a hidden file beside the target, renamed to it when the run ends: a run that fails or is interrupted leaves
/// no trace file and no half of one. A write that fails (a full disk) stops the writing and is reported by
/// ``finish()``'s outcome; the run itself goes on.
public final class OperationTraceFileWriter: @unchecked Sendable {  // used by one thread at a time: the simulation runs one
    /// Settled records handed to the file at once.
    public let flushEvery: Int
    /// The most records the recorder held at once during the run (a test of the bound).
    public internal(set) var mostHeld = 0

    public let file: URL
    private let partial: URL
    private var handle: FileHandle?
    private var failure: String?
    /// Records written (the header not counted).
    public private(set) var written = 0

    public init(file: URL, flushEvery: Int = 4096) {
        self.file = file
        self.flushEvery = max(1, flushEvery)
        partial = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).partial")
    }

    /// What went wrong, once ``finish()`` ran: nil when the file is whole.
    public var outcome: String? { failure }

    func begin(_ header: TraceHeader) {
        do {
            try? FileManager.default.removeItem(at: partial)
            guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
                failure = "cannot create \(partial.path)"
                return
            }
            handle = try FileHandle(forWritingTo: partial)
            try handle?.write(contentsOf: TraceCoding.lines([header]))
        } catch {
            fail(error)
        }
    }

    func write(_ records: [OperationRecord]) {
        guard handle != nil, !records.isEmpty else { return }
        do {
            try handle?.write(contentsOf: TraceCoding.lines(records))
            written += records.count
        } catch {
            fail(error)
        }
    }

    /// Closes the file and puts it in place (replacing an older one).
    func finish() {
        guard let handle else { return }
        self.handle = nil
        do {
            try handle.close()
            if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
            try FileManager.default.moveItem(at: partial, to: file)
        } catch {
            failure = "\(error)"
            try? FileManager.default.removeItem(at: partial)
        }
    }

    /// The run failed: no trace file.
    func abandon() {
        try? handle?.close()
        handle = nil
        try? FileManager.default.removeItem(at: partial)
    }

    private func fail(_ error: any Error) {
        failure = "\(error)"
        abandon()
    }
}
