// NEVER COMPILED OR RUN HERE. This target builds only where Apple's Core Data can be imported (macOS, iOS); on
// the Linux machines this project is developed on it is an empty module. It was written against Apple's
// documented API and has not been compiled, run or checked on an Apple platform (Docs/calibration.md).
#if canImport(CoreData)
import CoreData
import Darwin
import Foundation
import TraceReplay

/// Core Data's SQL debug log, captured: the log is switched on with the user default `com.apple.CoreData.SQLDebug`
/// = 1 (and `com.apple.CoreData.Logging.stderr` = 1, which asks Core Data to write its log to stderr rather than
/// to the unified log only: inferred from its name, unverified), stderr is redirected into a pipe with `dup2`,
/// and a reader thread splits what comes by the step markers the replay writes (``SQLDebugStepLog``). Whatever
/// is not Core Data's is passed on to the original stderr.
public final class SQLLogCapture: @unchecked Sendable {  // `steps` and `waiting` behind `lock`
    private let originalStderr: Int32
    private let readEnd: Int32
    private let lock = NSCondition()
    private var steps: [Int: SQLLogCounts] = [:]
    private var parser = SQLDebugStepLog()

    public init() throws {
        // UNVERIFIED: Apple documents these keys nowhere on developer.apple.com; `-com.apple.CoreData.SQLDebug 1` and
        // `-com.apple.CoreData.Logging.stderr 1` are the launch arguments in published use (argument domain). Set here
        // in the application domain before any Core Data call, which Core Data is expected, not known, to read; this
        // also persists them in the tool's preferences (~/Library/Preferences/ambar-calibrate.plist).
        UserDefaults.standard.set(1, forKey: "com.apple.CoreData.SQLDebug")
        UserDefaults.standard.set(1, forKey: "com.apple.CoreData.Logging.stderr")
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ReplayError("pipe() failed: errno \(errno)") }
        originalStderr = dup(STDERR_FILENO)
        readEnd = fds[0]
        guard dup2(fds[1], STDERR_FILENO) >= 0 else { throw ReplayError("dup2() failed: errno \(errno)") }
        close(fds[1])
        setvbuf(stderr, nil, _IONBF, 0)
        let thread = Thread { [self] in readLoop() }
        thread.name = "ambar-calibrate SQL log"
        thread.start()
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(readEnd, &buffer, buffer.count)
            if n <= 0 { return }
            // Pass everything on, so nothing the process logs is lost.
            _ = buffer.withUnsafeBytes { write(originalStderr, $0.baseAddress, n) }
            let text = String(decoding: buffer[0..<n], as: UTF8.self)
            lock.lock()
            for (step, counts) in parser.feed(text) { steps[step] = counts }
            lock.broadcast()
            lock.unlock()
        }
    }

    /// Ends step `n` in the log and waits until the reader has read up to it (at most `timeout` seconds); returns
    /// what the log said during the step.
    public func endStep(_ n: Int, timeout: TimeInterval = 10) -> SQLLogCounts? {
        let marker = Array(SQLDebugStepLog.marker(n).utf8)
        _ = marker.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, marker.count) }
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while steps[n] == nil {
            if !lock.wait(until: deadline) { return nil }
        }
        return steps.removeValue(forKey: n)
    }
}

/// The main thread's CPU time (user + system), read from any thread: the work Core Data did there during a
/// step (a main-queue context's calls, the automatic merges and controller updates it ran there).
public final class MainThreadClock: @unchecked Sendable {  // the port is set once, on the main thread
    private var port: thread_act_t = 0

    /// Call on the main thread.
    public init() {
        precondition(Thread.isMainThread, "MainThreadClock must be made on the main thread")
        port = mach_thread_self()
    }

    public var nanoseconds: UInt64 {
        var info = thread_basic_info()
        var count = mach_msg_type_number_t(MemoryLayout<thread_basic_info_data_t>.size / MemoryLayout<natural_t>.size)
        let result = withUnsafeMutablePointer(to: &info) {
            $0.withMemoryRebound(to: integer_t.self, capacity: Int(count)) { thread_info(port, thread_flavor_t(THREAD_BASIC_INFO), $0, &count) }
        }
        guard result == KERN_SUCCESS else { return 0 }
        let user = UInt64(info.user_time.seconds) * 1_000_000_000 + UInt64(info.user_time.microseconds) * 1000
        let system = UInt64(info.system_time.seconds) * 1_000_000_000 + UInt64(info.system_time.microseconds) * 1000
        return user + system
    }
}

/// Replays a trace through Core Data record by record (in the trace's order; Docs/calibration.md "The Apple
/// side" says why the interleaving inside calls is not followed there) and measures each step.
public enum CoreDataCalibration {
    public struct Outcome {
        public var steps: [StepMeasurement]
        public var divergences: [String]
        public var unexpressed: [String]
        /// Steps whose log never reached the reader (the log did not reach stderr: the SQL counts are missing).
        public var stepsWithoutLog: Int
    }

    /// Runs on a thread other than the main thread (the main thread must run its queue for main-queue contexts).
    public static func replay(header: TraceHeader, records: [OperationRecord], directory: URL, log: SQLLogCapture, clock: MainThreadClock) throws -> Outcome {
        precondition(!Thread.isMainThread, "replay on a thread of its own: the main thread serves main-queue contexts")
        let backend = try CoreDataReplayBackend(header: header, directory: directory)
        let replayer = Replayer(backend: backend)
        replayer.keepsSteps = false
        var steps: [StepMeasurement] = []
        var missing = 0
        var before = backend.counters()
        for r in records where r.op != "end" {
            let main0 = clock.nanoseconds
            let t0 = DispatchTime.now().uptimeNanoseconds
            try replayer.apply(r)
            let t1 = DispatchTime.now().uptimeNanoseconds
            let main1 = clock.nanoseconds
            let sql = log.endStep(r.n)
            if sql == nil { missing += 1 }
            let after = backend.counters()
            steps.append(StepMeasurement(
                n: r.n, op: r.op, thread: r.thread, nanoseconds: t1 - t0, mainThreadNanoseconds: main1 &- main0, sql: sql ?? SQLLogCounts(),
                notifications: after["notificationPosted", default: 0] - before["notificationPosted", default: 0],
                saves: after["contextSave", default: 0] - before["contextSave", default: 0],
                registeredObjects: backend.registeredObjects()))
            before = after
        }
        return Outcome(steps: steps, divergences: replayer.outcome.divergences, unexpressed: backend.unexpressed, stepsWithoutLog: missing)
    }
}
#endif
