import CSQLite

/// SQLite's own memory counters for the whole process, for a caller that reports memory.
package enum SQLiteStatistics {
    /// Bytes of heap SQLite holds now (`sqlite3_memory_used`).
    package static var memoryUsed: Int64 { sqlite3_memory_used() }
    /// Highest `memoryUsed` since the process started (`sqlite3_memory_highwater`).
    package static var memoryHighwater: Int64 { sqlite3_memory_highwater(0) }
    /// Page-cache bytes that overflowed into the heap (`SQLITE_STATUS_PAGECACHE_OVERFLOW`).
    package static var pageCacheOverflow: Int64 {
        var current: Int64 = 0, high: Int64 = 0
        sqlite3_status64(SQLITE_STATUS_PAGECACHE_OVERFLOW, &current, &high, 0)
        return current
    }
}
