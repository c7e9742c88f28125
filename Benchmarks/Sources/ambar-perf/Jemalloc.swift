import CJemallocPerf

/// jemalloc's `stats.allocated` after an `epoch` refresh, less the thread caches (as Workbench's MemoryProbe
/// reads it; a copy so that this tool does not rebuild with the workbench).
enum Jemalloc {
    static func allocated() -> Int64? {
        var newEpoch: UInt64 = 1
        var oldEpoch: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        _ = mallctl("epoch", &oldEpoch, &size, &newEpoch, MemoryLayout<UInt64>.size)
        guard let allocated = read("stats.allocated") else { return nil }
        return max(0, allocated - (read("stats.arenas.4096.tcache_bytes") ?? 0))
    }

    private static func read(_ name: String) -> Int64? {
        var value: Int = 0
        var size = MemoryLayout<Int>.size
        return mallctl(name, &value, &size, nil, 0) == 0 ? Int64(value) : nil
    }
}
