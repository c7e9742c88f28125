import Foundation
import ObjectGraph
import Synchronization

/// A variant's samples over its run: memory, the main queue's depth and the phase at each sample, the -wal file's
/// largest size, and what the actors' threads allocated. Real mode samples on a thread of its own
/// (``startThread()``); a simulation every 50 ms of virtual time while a phase's actors run.
final class RunSampler: Sendable {
    let runStart: UInt64
    let control: VariantProgress
    let main: SimulatedMainThread
    let samples = Mutex<[TimeSample]>([])
    let currentPhase = Mutex("setup")
    let stopSampling = Atomic<Bool>(false)
    /// The -wal file's largest size, sampled with memory (a pinned query generation keeps
    /// SQLite from checkpointing the log past it, so it grows with every commit made meanwhile).
    /// An in-memory store has no file and no log: no sampling, and no walSize row (absent, not zero).
    let inMemory: Bool
    let walPath: String
    let peakWAL = Atomic<Int64>(0)
    /// Bytes the actors' threads allocated and freed, added as each actor ends.
    let threadTotals = Mutex<(allocated: Int64, freed: Int64)>((0, 0))
    /// The largest allocation read at a phase's end (``notePeakAllocated()``), beside the samples'.
    let peakAllocated = Atomic<Int64>(0)

    init(runStart: UInt64, control: VariantProgress, main: SimulatedMainThread, inMemory: Bool, walPath: String) {
        (self.runStart, self.control, self.main, self.inMemory, self.walPath) = (runStart, control, main, inMemory, walPath)
    }

    func sampleWAL() {
        guard !inMemory else { return }
        let size = ((try? FileManager.default.attributesOfItem(atPath: walPath))?[.size] as? NSNumber)?.int64Value ?? 0
        _ = peakWAL.max(size, ordering: .relaxed)
    }

    func sample() {
        sampleWAL()
        let reading = MemoryProbe.reading()
        let reached = Clock.now() - runStart
        control.reachedNanos.store(reached, ordering: .relaxed)
        let s = TimeSample(seconds: Double(reached) / 1e9, phase: currentPhase.withLock { $0 }, allocated: reading.allocated,
                           resident: reading.resident, mainQueueDepth: main.depth, viewRegisteredObjects: nil)
        samples.withLock { $0.append(s) }
    }

    /// Real mode: samples every 50 ms on a thread of its own until ``stopSampling``.
    func startThread() {
        let sampler = Thread {
            while !self.stopSampling.load(ordering: .relaxed) {
                self.sample()
                usleep(50_000)
            }
        }
        sampler.start()
    }

    /// Adds what the calling thread allocated and freed (an actor's, as it ends).
    func addThreadTotals() {
        if let totals = MemoryProbe.threadTotals() { threadTotals.withLock { $0.allocated += totals.allocated; $0.freed += totals.freed } }
    }

    /// Reads the allocation now (a phase's end) into ``peakAllocated``.
    func notePeakAllocated() {
        if let a = MemoryProbe.reading().allocated { _ = peakAllocated.max(a, ordering: .relaxed) }
    }
}
