import Foundation

/// The one schema every peer uses: an item with a string, a double, a date and a to-one relationship to a group,
/// plus a unique integer ID for updates. The values of item `i` are the same in every peer.
public enum Schema {
    /// Groups seeded before every run; item `i` belongs to group `i % groupCount`.
    public static let groupCount = 100

    public static func name(_ i: Int) -> String { "item \(i)" }
    public static func price(_ i: Int, round: Int = 0) -> Double { Double(i) * 0.25 + Double(round) }
    public static func date(_ i: Int, round: Int = 0) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(i + round)) }
    /// The group index (0-based) of item `i`.
    public static func group(_ i: Int) -> Int { i % groupCount }

    /// The raw SQL schema of the raw-SQLite and GRDB peers: the same columns and indexes as the Core Data layout
    /// (unique index on the ID, index on the foreign key), without `Z_ENT` / `Z_OPT`.
    public static let sql = """
        CREATE TABLE grp (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE item (id INTEGER PRIMARY KEY, remoteID INTEGER NOT NULL, name TEXT, price REAL NOT NULL,
                           createdAt REAL, groupID INTEGER REFERENCES grp(id));
        CREATE UNIQUE INDEX item_remoteID ON item (remoteID);
        CREATE INDEX item_groupID ON item (groupID);
        """
}

/// A fresh temporary directory, removed by ``remove()``.
public struct Scratch: Sendable {
    public let url: URL
    public init(_ label: String) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-perf-\(label)-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }
    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Monotonic nanoseconds.
@inline(__always) public func nowNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// CPU nanoseconds used by the calling thread (not counting time it was preempted: the machine is shared).
@inline(__always) public func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// The calling thread's scheduler accounting from `/proc/thread-self/schedstat` (Linux): nanoseconds on a CPU and
/// nanoseconds spent runnable but waiting for one (preempted or not yet scheduled). Nil where the file is missing.
/// Read by the running thread, the run-queue total is exact (it grows only when the thread is scheduled in) but the
/// CPU total lags by up to a scheduler tick: take CPU time from ``threadCPUNanos()``. A span's wall time less its
/// CPU time and its run-queue delay is the time the thread was blocked: on a lock, a condition or I/O.
public func threadSchedStat() -> (onCPU: UInt64, runQueue: UInt64)? {
    let fd = open("/proc/thread-self/schedstat", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 96)
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    let fields = buffer[..<n].split(separator: UInt8(ascii: " ")).prefix(2).compactMap { UInt64(String(decoding: $0, as: UTF8.self)) }
    return fields.count == 2 ? (fields[0], fields[1]) : nil
}

/// Runs `body` and returns its wall time in seconds.
public func timed(_ body: () throws -> Void) rethrows -> Double {
    let t0 = nowNanos()
    try body()
    return Double(nowNanos() - t0) / 1e9
}

/// Keeps a value alive and observable so the optimizer cannot drop the reads that produced it.
@inline(never) public func keep<T>(_ value: T) { withExtendedLifetime(value) {} }
