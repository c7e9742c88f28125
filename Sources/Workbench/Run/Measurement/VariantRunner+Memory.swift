import Foundation
import Synchronization

extension VariantRunner {
    /// The objects of the variant that ran last in this process, watched until they are deallocated.
    private static let lastVariant = Mutex<[WatchedObject]>([])

    struct WatchedObject: @unchecked Sendable {  // a weak reference, read once the variant is over
        let name: String
        weak var object: AnyObject?
    }

    /// What a variant's memory figures are measured from.
    struct MemoryBaseline {
        var reading: MemoryProbe.Reading
        /// jemalloc returned the freed pages to the system first.
        var purged: Bool
        /// Objects of the previous variant still alive when the reading was taken (none when it was freed).
        var previousAlive: [String]
    }

    /// Waits (up to `timeout` seconds) until the previous variant's objects are deallocated, returns the freed pages
    /// to the system, and reads jemalloc's statistics (``MemoryProbe/reading()`` refreshes its epoch).
    static func memoryBaseline(timeout: Double) -> MemoryBaseline {
        let alive = stillAlive(lastVariant.withLock { $0 }, timeout: timeout)
        lastVariant.withLock { $0 = [] }
        let purged = MemoryProbe.purge()
        return MemoryBaseline(reading: MemoryProbe.reading(), purged: purged, previousAlive: alive)
    }

    /// The names of the `watched` objects still alive after waiting up to `timeout` seconds for them to go.
    static func stillAlive(_ watched: [WatchedObject], timeout: Double) -> [String] {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while true {
            let alive = watched.filter { $0.object != nil }.map(\.name)
            if alive.isEmpty || DispatchTime.now().uptimeNanoseconds >= deadline { return alive }
            usleep(1000)
        }
    }

    /// Watches a finished variant's objects (``memoryBaseline(timeout:)`` waits for them to go).
    static func watch(_ objects: [WatchedObject]) {
        lastVariant.withLock { $0 = objects }
    }

    /// The objects of a finished run, held until ``run()`` lets them go.
    final class Leftovers {
        var objects: [AnyObject] = []
    }
}
