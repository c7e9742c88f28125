#if canImport(CJemalloc)
import CJemalloc
#endif
import Foundation

#if !canImport(CJemalloc)
/// Built without jemalloc (`make tsan`): every statistic is unavailable.
private func mallctl(_ name: UnsafePointer<CChar>?, _ old: UnsafeMutableRawPointer?, _ oldSize: UnsafeMutablePointer<Int>?, _ new: UnsafeMutableRawPointer?, _ newSize: Int) -> Int32 { -1 }
#endif

/// jemalloc's own statistics (architecture.md "Measurement principles"): `epoch` refresh, allocated bytes less
/// thread-cache bytes, resident bytes, and the calling thread's allocated / freed totals.
public enum MemoryProbe {
    /// A reading in bytes; nil fields when jemalloc is not the allocator.
    public struct Reading: Sendable, Codable, Equatable {
        public var allocated: Int64?
        public var resident: Int64?
    }

    private static func read(_ name: String) -> Int64? {
        var value: Int = 0
        var size = MemoryLayout<Int>.size
        let rc = name.withCString { mallctl($0, &value, &size, nil, 0) }
        return rc == 0 ? Int64(value) : nil
    }

    private static func read64(_ name: String) -> Int64? {
        var value: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        let rc = name.withCString { mallctl($0, &value, &size, nil, 0) }
        return rc == 0 ? Int64(bitPattern: value) : nil
    }

    /// Refreshes jemalloc's statistics and reads them.
    public static func reading() -> Reading {
        var newEpoch: UInt64 = 1
        var oldEpoch: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        _ = "epoch".withCString { mallctl($0, &oldEpoch, &size, &newEpoch, MemoryLayout<UInt64>.size) }
        let allocated = read("stats.allocated")
        let tcache = read("stats.arenas.4096.tcache_bytes") ?? 0
        return Reading(allocated: allocated.map { max(0, $0 - tcache) }, resident: read("stats.resident") ?? residentFromProc())
    }

    /// Returns every arena's unused dirty pages to the system (jemalloc `arena.<all>.purge`), so that a variant's
    /// resident memory starts from what is live, not from what the previous variant freed. False when jemalloc
    /// does not answer.
    @discardableResult
    public static func purge() -> Bool {
        "arena.4096.purge".withCString { mallctl($0, nil, nil, nil, 0) } == 0
    }

    /// Bytes the calling thread has allocated and freed so far.
    public static func threadTotals() -> (allocated: Int64, freed: Int64)? {
        guard let a = read64("thread.allocated"), let f = read64("thread.deallocated") else { return nil }
        return (a, f)
    }

    /// Whether jemalloc answers (it is the process's allocator).
    public static var isAvailable: Bool { read("stats.allocated") != nil }

    private static func residentFromProc() -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int64(fields[1]) else { return nil }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
