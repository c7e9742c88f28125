import Foundation
import ObjectGraph

/// Monotonic time and the calling thread's CPU time, in nanoseconds.
public enum Clock {
    /// Uptime, or the virtual time inside a simulation.
    public static func now() -> UInt64 { Execution.now() }
    public static func threadCPU() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
    /// Sleeps until `deadline` (a value of ``now()``); returns at once when it has passed. Virtual in a simulation.
    public static func sleep(until deadline: UInt64) { Execution.sleep(until: deadline) }
}
