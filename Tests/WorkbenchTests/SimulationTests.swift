import Foundation
import ObjectGraph
import Synchronization
import Testing
@testable import Workbench

/// The scheduler's rules (Docs/simulation.md "The scheduler"), each with virtual times asserted exactly.
@Suite("Simulated time: the scheduler (Docs/simulation.md)")
struct SimulationTests {
    /// A profile where a block costs `block` ns, a property set `set` ns, and everything else nothing.
    static func profile(block: UInt64 = 0, set: UInt64 = 1000) throws -> CostProfile {
        var text = "description: test\nfittedTo: nothing\ncosts:\n"
        for op in CostedOperation.allCases {
            let ns = op == .blockRun ? block : op == .propertySet ? set : 0
            text += "  \(op.name): { ns: \(ns) }\n"
        }
        return try CostProfile.parse(text, file: "test.yaml", name: "test")
    }

    /// Work that costs `n` µs under ``profile(block:set:)`` with the default property-set cost.
    static func work(microseconds n: Int) { Probe.count(.propertySet, n) }

    /// Records (label, virtual time) pairs from inside a simulation.
    final class Log: @unchecked Sendable {  // appended by the baton holder only
        var entries: [String] = []
        func add(_ s: String) { entries.append("\(s)@\(Execution.now() / 1000)") }
    }

    @Test("an item queued at t on a busy queue starts when the queue is free, and its cost moves the queue's free-at")
    func queueFreeAt() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let log = Log()
        scheduler.run {
            let q = ContextQueue(label: "q")
            q.async { log.add("a-start"); Self.work(microseconds: 5); log.add("a-end") }
            q.async { log.add("b-start"); Self.work(microseconds: 2); log.add("b-end") }
        }
        #expect(log.entries == ["a-start@0", "a-end@5", "b-start@5", "b-end@7"])
    }

    @Test("performAndWait on a queue with earlier pending items runs them first (GCD's FIFO); the caller waits in virtual time")
    func syncIsFIFO() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let log = Log()
        scheduler.run {
            let q = ContextQueue(label: "q")
            q.async { log.add("pending-start"); Self.work(microseconds: 10) }
            q.sync { log.add("sync-start"); Self.work(microseconds: 1) }
            log.add("caller-after")
        }
        #expect(log.entries == ["pending-start@0", "sync-start@10", "caller-after@11"])
    }

    @Test("a main-queue block that needs a queue another holds waits until that block ends; the wait is the main queue's blocked time")
    func virtualWaitIsBlockedTime() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let log = Log()
        let mainBlocked = Mutex<UInt64>(0)
        scheduler.run {
            let main = ContextQueue(label: "main")
            let coordinator = ContextQueue(label: "coordinator")
            scheduler.spawn(name: "saver") {
                coordinator.sync { log.add("save-start"); Self.work(microseconds: 300) }
            }
            scheduler.spawn(name: "ui") {
                Clock.sleep(until: 100_000)
                main.sync {
                    log.add("main-start")
                    coordinator.sync { log.add("fetch-start"); Self.work(microseconds: 20) }
                    log.add("main-end")
                }
            }
            scheduler.waitUntilQuiet()
            mainBlocked.withLock { $0 = (main.simulatedQueue as! VirtualQueue).blockedNanos }
        }
        #expect(log.entries == ["save-start@0", "main-start@100", "fetch-start@300", "main-end@320"])
        #expect(mainBlocked.withLock { $0 } == 200_000)
    }

    @Test("A pooled resource's holders overlap up to its capacity, then wait in virtual time (semantics §8 connection pool)")
    func pooledLanesOverlap() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let log = Log()
        let pool = SharedResource(id: "readers", label: "readers")
        scheduler.run {
            for name in ["a", "b", "c"] {
                scheduler.spawn(name: name) {
                    _ = try? Execution.pooled(pool, capacity: 2) { log.add("\(name)-start"); Self.work(microseconds: 10); log.add("\(name)-end") }
                }
            }
            scheduler.waitUntilQuiet()
        }
        // Two lanes: a and b at 0, c when the first of them frees (10 µs).
        #expect(log.entries.filter { $0.hasSuffix("-start@0") }.count == 2)
        #expect(log.entries.contains { $0.hasSuffix("-start@10") })
        #expect(log.entries.filter { $0.hasSuffix("-end@20") }.count == 1)
    }

    @Test("a block's cost is the sum of its operations at the profile's prices, plus the block itself when queued (not when waited for)")
    func costOfABlock() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile(block: 7000, set: 1000))
        let log = Log()
        scheduler.run {
            let q = ContextQueue(label: "q")
            q.async { Self.work(microseconds: 3) }
            q.sync { log.add("sync-start"); Self.work(microseconds: 1) }
            log.add("after")
        }
        #expect(log.entries == ["sync-start@10", "after@11"])
        #expect(scheduler.totals.all[CostedOperation.propertySet.rawValue] == 4)
        #expect(scheduler.totals.all[CostedOperation.blockRun.rawValue] == 1)
    }

    @Test("SQLite's one writer per file: a save through another coordinator waits in virtual time for the save under way (semantics §2.4, §8)")
    func oneWriterPerFile() throws {
        var text = "description: test\nfittedTo: nothing\ncosts:\n"
        for op in CostedOperation.allCases { text += "  \(op.name): { ns: \(op == .rowInserted ? 1_000_000 : 0) }\n" }
        let scheduler = Scheduler(seed: 1, profile: try CostProfile.parse(text, file: "t.yaml", name: "t"))
        let directory = try TemporaryDirectory("one-writer")
        let log = Log()
        let model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
        try scheduler.run {
            func context(_ name: String) throws -> ManagedObjectContext {
                let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: name)
                try coordinator.addPersistentStore(type: .sqlite, at: directory.file("store.sqlite"))
                let c = ManagedObjectContext(concurrencyType: .privateQueue)
                c.persistentStoreCoordinator = coordinator
                return c
            }
            let a = try context("a"), b = try context("b")
            scheduler.spawn(name: "a") {
                try? a.performAndWait {
                    for i in 0..<10 { try a.insertNewObject(forEntityName: "Record").setValue(Int64(i), forKey: "id") }
                    try a.save()
                }
                log.add("a-saved")
            }
            scheduler.spawn(name: "b") {
                Clock.sleep(until: 1_000_000)
                try? b.performAndWait {
                    try b.insertNewObject(forEntityName: "Record").setValue(Int64(100), forKey: "id")
                    try b.save()
                }
                log.add("b-saved")
            }
            scheduler.waitUntilQuiet()
        }
        // a's save writes 10 rows (10 ms); b asks at 1 ms, on its own coordinator, and writes once a is done.
        #expect(log.entries == ["a-saved@10000", "b-saved@11000"])
    }

    @Test("sleeps are virtual: an hour passes in no wall time")
    func sleepsAreVirtual() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let wall = DispatchTime.now().uptimeNanoseconds
        let t = scheduler.run { () -> UInt64 in
            Clock.sleep(until: 3_600_000_000_000)
            return Clock.now()
        }
        #expect(t == 3_600_000_000_000)
        #expect(DispatchTime.now().uptimeNanoseconds - wall < 60_000_000_000)
    }

    @Test("frames coalesce like a display link: a main queue busy for 100 ms misses 5 ticks at 60 Hz, it does not queue 6 frames")
    func framesCoalesce() throws {
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let main = Mutex<SimulatedMainThread?>(nil)
        let frameStarts = Mutex<[UInt64]>([])
        scheduler.run {
            let m = SimulatedMainThread()
            main.withLock { $0 = m }
            let busyUntil = Atomic<Bool>(false)
            // 10 ms in, a block holds the main queue for 100 ms.
            scheduler.spawn(name: "stall") {
                Clock.sleep(until: 10_000_000)
                m.queue.async { Self.work(microseconds: 100_000); busyUntil.store(true, ordering: .relaxed) }
            }
            m.scheduleFrames(on: scheduler, rate: 60, from: 0, until: { Clock.now() >= 190_000_000 }) {
                frameStarts.withLock { $0.append(Clock.now()) }
            }
            scheduler.waitUntilQuiet()
        }
        let state = try #require(main.withLock { $0 }).stats.state.withLock { $0 }
        let starts = frameStarts.withLock { $0 }
        // Ticks at 0, 16.7, 33.3 … 183.3 ms (12 ticks before 190 ms). The stall runs from 10 to 110 ms: the tick at
        // 16.7 ms queues a frame that waits until 110 ms; the ticks at 33.3 … 100 ms (5) find it pending.
        #expect(state.framesMissed == 5)
        #expect(state.frames == 12 - 5)
        #expect(starts.contains(110_000_000))
        // That one late frame was due at the 33.3 ms refresh and shows at the 116.7 ms one: 5 refreshes of hitch
        // time, not its overrun past a 16.67 ms budget (76.7 ms).
        #expect(abs(state.hitch60 - 5 * 16.666_666) < 0.001)
    }

    /// Runs a 60 Hz frame clock for 400 ms of virtual time with one 100 ms main-queue block queued at `blockAt` ns.
    static func oneBlock(at blockAt: UInt64, frameCost microseconds: Int = 0) throws -> SimulatedMainThread.Stats.State {
        let scheduler = Scheduler(seed: 1, profile: try profile())
        let main = Mutex<SimulatedMainThread?>(nil)
        scheduler.run {
            let m = SimulatedMainThread()
            main.withLock { $0 = m }
            scheduler.spawn(name: "stall") {
                Clock.sleep(until: blockAt)
                m.queue.async { Self.work(microseconds: 100_000) }
            }
            m.scheduleFrames(on: scheduler, rate: 60, from: 0, until: { Clock.now() >= 400_000_000 }) { Self.work(microseconds: microseconds) }
            scheduler.waitUntilQuiet()
        }
        return try #require(main.withLock { $0 }).stats.state.withLock { $0 }
    }

    // Hitch time is counted per display frame against its deadline, as Apple's hitch-time ratio
    // does. A block of T ms delays the one frame behind it; that frame's lateness past its refresh is the hitch
    // time, counted once, and the ticks it made wait are missed frames that queue nothing.
    @Test("One 100 ms block at 60 Hz is about 100 ms of hitch time and 5 missed frames, counted once (simulated)")
    func oneBlockHitchSimulated() throws {
        // The block holds the main queue from 1 to 101 ms. The tick at 16.7 ms queues the frame due on screen at
        // 33.3 ms; it runs at 101 ms and shows at the 116.7 ms refresh: 5 refreshes late (83.3 ms, the screen went
        // 100 ms without an update where one refresh was due). The ticks at 33.3 … 100 ms find it pending: 5
        // missed frames. Queuing a frame per tick and summing each one's overrun (the old real mode) would count
        // 6 frames behind the block and 67.7 + 51 + 34.3 + 17.7 + 1 = 171.7 ms.
        let state = try Self.oneBlock(at: 1_000_000)
        #expect(state.framesMissed == 5)
        #expect(abs(state.hitch60 - 5 * 16.666_666) < 0.001)
        // Ticks at 0, 16.7 … 400 ms (the clock stops after the tick that sees 400 ms): 25, of which 5 were missed.
        #expect(state.frames == 25 - 5)
        // The same frames against a 120 Hz display: due at 25 ms, shown at 108.3 ms: 10 refreshes of 8.33 ms.
        #expect(abs(state.hitch120 - 10 * 8.333_333) < 0.001)

        // A frame that itself takes 1 ms ends past the 100 ms refresh it could have made: 6 refreshes (100 ms),
        // still one late frame, and the hitch time is the one frame's, not a sum.
        let costly = try Self.oneBlock(at: 16_000_000, frameCost: 1000)
        #expect(costly.framesMissed == 5)
        #expect(abs(costly.hitch60 - 6 * 16.666_666) < 0.001)
    }

    // Real mode: the frame clock on a thread of its own coalesces through the same code as the
    // simulated display link, so a blocked main queue holds one pending frame, not one per tick. Wall-clock
    // figures are only bounded loosely (a loaded 2-core machine); the counts carry the rule.
    @Test("In real mode a 100 ms block at 60 Hz queues one frame behind it; the ticks it delays are missed frames, counted once")
    func oneBlockHitchReal() throws {
        let main = SimulatedMainThread()
        let stop = Atomic<Bool>(false)
        let thread = main.runFrames(rate: 60, until: { stop.load(ordering: .relaxed) }) {}
        usleep(100_000)
        main.queue.async { usleep(100_000) }
        usleep(300_000)
        stop.store(true, ordering: .relaxed)
        while !thread.isFinished { usleep(1000) }
        main.drain()
        let state = main.stats.state.withLock { $0 }
        // The block and at most one frame were ever queued: the ticks behind the block queued nothing.
        #expect(state.maxDepth <= 2)
        // 100 ms at 60 Hz is 6 ticks: 4 to 6 are missed on a quiet machine; the range allows for a late clock.
        #expect((3...18).contains(state.framesMissed), "missed \(state.framesMissed)")
        #expect(state.frames >= 1)
        // Each refresh of hitch time is a tick the late frame made wait (plus its rounding to a refresh): no
        // lateness counted once per queued frame.
        #expect(state.hitch60 <= Double(state.framesMissed + 3) * 16.666_666, "hitch \(state.hitch60) ms, missed \(state.framesMissed)")
    }

    @Test("ties between events due at the same time are broken by the seed: the same seed the same order, other seeds another")
    func tiesFollowTheSeed() throws {
        func order(seed: UInt64) throws -> [String] {
            let scheduler = Scheduler(seed: seed, profile: try Self.profile())
            let log = Log()
            scheduler.run {
                for name in ["a", "b", "c"] {
                    scheduler.spawn(name: name) { Clock.sleep(until: 1_000); log.add(name) }
                }
                scheduler.waitUntilQuiet()
            }
            return log.entries
        }
        #expect(try order(seed: 3) == order(seed: 3))
        let orders = try Set((1...30).map { try order(seed: UInt64($0)) })
        #expect(orders.count > 1)
        #expect(orders.allSatisfy { $0.allSatisfy { $0.hasSuffix("@1") } })
    }

    @Test("queues made outside a simulation stay dispatch queues; inside one they are the simulation's")
    func queuesBelongToTheirThread() throws {
        #expect(ContextQueue(label: "real").simulatedQueue == nil)
        let scheduler = Scheduler(seed: 1, profile: try Self.profile())
        let simulated = scheduler.run { ContextQueue(label: "sim").simulatedQueue != nil }
        #expect(simulated)
        #expect(ExecutionThread.current == nil)
    }
}

/// Cost profiles: every figure checked, every mistake named by file, line and field.
@Suite("Cost profiles (Docs/simulation.md: Cost profiles)")
struct CostProfileTests {
    static func text(_ overrides: [String: String]) -> String {
        var text = "description: test\nfittedTo: nothing\ncosts:\n"
        for op in CostedOperation.allCases { text += "  \(op.name): \(overrides[op.name] ?? "{ ns: 1 }")\n" }
        return text
    }

    @Test("the shipped default profile loads and prices every operation")
    func shippedDefault() throws {
        let profile = try CostProfile.load(Scenario.defaultProfile)
        #expect(profile.name == "modern-iphone")
        #expect(!profile.fittedTo.isEmpty)
        #expect(profile.nanos.count == CostedOperation.allCases.count)
        #expect(Set(profile.sources.keys) == Set(CostedOperation.allCases.map(\.name)))
    }

    @Test("hostile figures are refused with file:line and the field", arguments: [
        ("{ ns: .nan }", "test.yaml:4:27: costs.objectRegistered.ns: expected a finite number of nanoseconds from 0 to 1000000000, got \".nan\""),
        ("{ ns: -1 }", "test.yaml:4:27: costs.objectRegistered.ns: expected a finite number of nanoseconds from 0 to 1000000000, got \"-1\""),
        ("{ ns: 1e300 }", "test.yaml:4:27: costs.objectRegistered.ns: expected a finite number of nanoseconds from 0 to 1000000000, got \"1e300\""),
        ("{ ns: 5, speed: 2 }", "test.yaml:4:37: costs.objectRegistered.speed: unknown key; expected ns, source or estimated"),
        ("{ source: x }", "test.yaml:4:21: costs.objectRegistered.ns: missing"),
    ])
    func hostileFigures(value: String, message: String) {
        #expect(throws: ScenarioError.self) { try CostProfile.parse(Self.text(["objectRegistered": value]), file: "test.yaml", name: "t") }
        do { _ = try CostProfile.parse(Self.text(["objectRegistered": value]), file: "test.yaml", name: "t") } catch {
            #expect("\(error)" == message)
        }
    }

    @Test("an unknown operation and a missing one are named")
    func unknownAndMissing() {
        let unknown = Self.text([:]) + "  objectsTeleported: { ns: 1 }\n"
        do { _ = try CostProfile.parse(unknown, file: "p.yaml", name: "p"); Issue.record("accepted an unknown operation") } catch {
            #expect("\(error)".hasPrefix("p.yaml:\(CostedOperation.allCases.count + 4):3: costs.objectsTeleported: unknown operation"))
        }
        let missing = Self.text([:]).split(separator: "\n").filter { !$0.contains("blockRun") }.joined(separator: "\n")
        do { _ = try CostProfile.parse(missing, file: "p.yaml", name: "p"); Issue.record("accepted a missing operation") } catch {
            #expect("\(error)".hasSuffix("costs: no cost for blockRun (every operation needs one; 0 is allowed)"))
        }
    }

    @Test("a profile name that is not a name, or a file that is not there, is bad input")
    func badNames() {
        #expect(throws: WorkbenchError.self) { try CostProfile.load("../../etc") }
        #expect(throws: WorkbenchError.self) { try CostProfile.load("no-such-profile") }
        #expect(throws: WorkbenchError.self) { try CostProfile.load("/nonexistent/profile.yaml") }
    }
}

/// Actors on the virtual clock.
@Suite("Simulated time: actors")
struct SimulatedActorTests {
    /// Found by the scenario fuzz: an actor at `rate: unlimited` with nothing to do took no
    /// virtual time per operation (an editor with no viewer, so no row on screen) or a nanosecond (a batch delete on
    /// an empty store), so the next began at (nearly) the same instant and the phase's end never came: `run` hung
    /// (and SIGTERM waited for it). An operation that finds nothing to do now waits a poll interval (1 ms).
    @Test("Fuzz finding: a closed-loop actor with nothing to do does not stop virtual time (the phase ends at its duration)",
          .timeLimit(.minutes(1)))
    func closedLoopActorWithNothingToDoLetsTimePass() throws {
        let text = """
            name: idle-editors
            stack: { topology: viewChildren }
            phases:
              - name: empty
                kind: run
                duration: 20ms
                actors:
                  - batch: { kind: delete, rate: unlimited, size: 10 }
              - name: seed
                actors:
                  - importer: { objects: 20, chunkSize: 10 }
              - name: run
                duration: 50ms
                actors:
                  - editor: { rate: unlimited, edits: 3 }
                  - writer: { rate: unlimited, edits: 1 }
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "idle.yaml").variants.first)
        let result = try runVariant(scenario)
        // The batch finds no row to delete and the editor no row on screen, so each polls once a millisecond; the
        // writer edits stored rows and its operations take their own time.
        let operations = try #require(result.counters["operations"])
        #expect(operations >= 70 && operations < 2_000, "\(operations) operations in 70 ms of phases")
        #expect((result.value("runTime", "value") ?? .infinity) < 1)
    }

    /// Found by the scenario fuzz: in a phase without a duration (it ends when its importers are done) a writer at
    /// 0.001/s slept until its next operation, 1,000 s away, and held the phase, its frames and samples open that
    /// long (8 s of wall time for a 200-object run; in real mode 1,000 s). The wait is now cut in 10 ms slices.
    @Test("Fuzz finding: a slow actor does not hold a phase without a duration open past its importers", .timeLimit(.minutes(1)))
    func slowActorDoesNotHoldAClosedPhaseOpen() throws {
        let text = """
            name: slow-writer
            stack: { topology: ambar }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 20, chunkSize: 10 }
              - name: run
                actors:
                  - viewer: { visibleObjects: 5 }
                  - writer: { rate: 0.001/s, edits: 1 }
                  - importer: { objects: 40, chunkSize: 10 }
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "slow.yaml").variants.first)
        let result = try runVariant(scenario)
        #expect((result.value("runTime", "value") ?? .infinity) < 5, "the run lasted \(result.value("runTime", "value") ?? -1) s of virtual time")
        #expect((result.counters["frames"] ?? .max) < 300)
    }

    /// Found by the scenario fuzz: an importer may finish the save it began when its phase ends,
    /// and with `saveEvery: 2` at 0.001/s that save waited for its second chunk, 1,000 s later, so a 1 s phase lasted
    /// 1,000 s. Past the phase's end the chunks of a save begun now follow at once.
    @Test("Fuzz finding: a save begun over several chunks is finished at the phase's end, not at the chunks' rate", .timeLimit(.minutes(1)))
    func saveBegunIsFinishedAtOnceAfterTheDuration() throws {
        let text = """
            name: slow-chunks
            stack: { topology: ambar }
            phases:
              - name: run
                duration: 1s
                actors:
                  - importer: { objects: 100, chunkSize: 10, rate: 0.001/s, saveEvery: 2 }
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "slow-chunks.yaml").variants.first)
        let result = try runVariant(scenario)
        #expect((result.value("runTime", "value") ?? .infinity) < 5, "the run lasted \(result.value("runTime", "value") ?? -1) s of virtual time")
        // The save begun (chunks 1 and 2) was finished whole, and nothing after it started.
        #expect(result.counters["rowsInserted"] == 20)
        #expect(result.counters["importerStoppedByDuration"] == 1)
    }
}

