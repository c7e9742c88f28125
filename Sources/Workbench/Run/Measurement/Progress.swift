import Foundation
import Synchronization

/// What a variant in progress has done, for the progress line, and whether it is asked to stop (Ctrl-C). The actors
/// add to its counters and the sampler notes the clock; only the progress thread reads them, so no measured figure
/// and no order of the run depends on it.
final class VariantProgress: Sendable {
    /// Objects the phase's importers and deleters have handled, and how many they were asked for.
    let objectsDone = Atomic<Int>(0)
    let objectsTotal = Atomic<Int>(0)
    /// The run's clock (virtual in a simulation) at the sampler's latest tick, since the variant began.
    let reachedNanos = Atomic<UInt64>(0)
    /// True stops the variant at the next chunk or operation of every actor (its result is marked partial).
    let isStopping: @Sendable () -> Bool

    init(isStopping: @escaping @Sendable () -> Bool) {
        self.isStopping = isStopping
    }

    /// A new phase: nothing done of nothing asked yet.
    func beginPhase() {
        objectsDone.store(0, ordering: .relaxed)
        objectsTotal.store(0, ordering: .relaxed)
    }
}

/// One reading of a variant in progress inside a phase (Docs/workbench.md "Progress"): what the progress line
/// shows on a terminal and with `--progress`.
public struct PhaseProgress: Sendable, Equatable {
    public var variant: String
    public var phase: String
    /// 1-based, of `phases`.
    public var phaseIndex: Int
    public var phases: Int
    public var objectsDone: Int
    /// 0: no importer or deleter in the phase (nothing to count).
    public var objectsTotal: Int
    /// The run's clock (virtual in a simulation) reached since the variant began, and since the phase began.
    public var reachedSeconds: Double
    public var phaseSeconds: Double
    /// The phase's `duration`, when it has one.
    public var phaseDuration: Double?
    /// Wall seconds since the phase began.
    public var wallSeconds: Double

    /// Whether the phase has an end to estimate the time left from: objects to count or a duration.
    public var hasEnd: Bool { objectsTotal > 0 || phaseDuration != nil }

    /// Wall seconds left in the phase at the rate so far: from the objects when the phase counts them, else from
    /// the clock against its duration; nil before there is a rate to go by, or without ``hasEnd``.
    public var secondsLeft: Double? {
        if objectsTotal > 0 {
            guard objectsDone > 0, wallSeconds > 0 else { return nil }
            return wallSeconds / Double(objectsDone) * Double(max(0, objectsTotal - objectsDone))
        }
        guard let phaseDuration, phaseSeconds > 0, wallSeconds > 0 else { return nil }
        return wallSeconds / phaseSeconds * max(0, phaseDuration - phaseSeconds)
    }

    /// `default: phase 2/3 run: 40,000/1,000,000 objects (4%), clock 12.35 s (phase 2.10 s of 300 s), about 1m 20s left`
    public var line: String {
        var parts: [String] = []
        if objectsTotal > 0 {
            let percent = Int((Double(objectsDone) / Double(objectsTotal) * 100).rounded(.down))
            parts.append("\(Self.grouped(objectsDone))/\(Self.grouped(objectsTotal)) objects (\(percent)%)")
        }
        let ofDuration = phaseDuration.map { " of \(Self.seconds($0))" } ?? ""
        parts.append("clock \(Self.seconds(reachedSeconds)) (phase \(Self.seconds(phaseSeconds))\(ofDuration))")
        if hasEnd { parts.append(secondsLeft.map { "about \(Self.duration($0)) left" } ?? "estimating time left") }
        return "\(variant): phase \(phaseIndex)/\(phases) \(phase): " + parts.joined(separator: ", ")
    }

    static func grouped(_ n: Int) -> String {
        let digits = String(n)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return out
    }

    static func seconds(_ s: Double) -> String { s < 10 ? String(format: "%.2f s", s) : String(format: "%.1f s", s) }

    static func duration(_ s: Double) -> String {
        let whole = Int(s.rounded(.up))
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m \(whole % 60)s" }
        return "\(whole / 3600)h \((whole % 3600) / 60)m"
    }
}

/// Reads a variant's ``VariantProgress`` every `interval` on a thread of its own (outside any simulation) and tells
/// `report` what it read, until ``stop()``.
final class ProgressTicker: Sendable {
    private struct Phase {
        var name = ""
        var index = 0
        var duration: Double?
        var startNanos: UInt64 = 0
        var startWall: UInt64 = 0
    }
    private let phase = Mutex(Phase())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(variant: String, phases: Int, counters: VariantProgress, interval: Double = 0.25, report: @escaping @Sendable (PhaseProgress) -> Void) {
        let thread = Thread { [self] in
            // Woken early by ``stop()``.
            while wake.wait(timeout: .now() + interval) == .timedOut {
                let p = phase.withLock { $0 }
                guard p.index > 0 else { continue }
                let reached = counters.reachedNanos.load(ordering: .relaxed)
                report(PhaseProgress(
                    variant: variant, phase: p.name, phaseIndex: p.index, phases: phases,
                    objectsDone: counters.objectsDone.load(ordering: .relaxed), objectsTotal: counters.objectsTotal.load(ordering: .relaxed),
                    reachedSeconds: Double(reached) / 1e9, phaseSeconds: Double(reached &- min(reached, p.startNanos)) / 1e9,
                    phaseDuration: p.duration, wallSeconds: Double(DispatchTime.now().uptimeNanoseconds - p.startWall) / 1e9))
            }
            finished.signal()
        }
        thread.name = "progress"
        thread.start()
    }

    /// A phase begins at `startNanos` on the run's clock (since the variant began).
    func begin(phase name: String, index: Int, duration: Double?, startNanos: UInt64) {
        phase.withLock { $0 = Phase(name: name, index: index, duration: duration, startNanos: startNanos, startWall: DispatchTime.now().uptimeNanoseconds) }
    }

    /// Ends the thread and waits for it: no reading is reported after this returns. Once; later calls do nothing.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wake.signal()
        finished.wait()
    }
}
