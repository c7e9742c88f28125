import Foundation
import Synchronization
import Workbench

/// stderr: lines, and on a terminal one line for the phase in progress redrawn in place (Docs/workbench.md "Ctrl-C
/// and progress"); without a terminal (`--progress` in CI) a phase's line once it has run a second, then at most
/// every five seconds, so that logs stay short.
final class ProgressOutput: Sendable {
    static let firstLoggedAfter = 1.0
    static let loggedEvery: UInt64 = 5_000_000_000
    let terminal: Bool
    private struct State {
        /// A phase line is on screen, not ended by a newline.
        var drawn = false
        /// The phase last logged (no terminal), and when.
        var loggedPhase = ""
        var logged: UInt64 = 0
    }
    private let state = Mutex(State())

    init(terminal: Bool) { self.terminal = terminal }

    /// A line of its own (a drawn phase line is cleared first).
    func line(_ text: String) {
        state.withLock { s in
            FileHandle.standardError.write(Data(((s.drawn ? "\r\u{1B}[K" : "") + text + "\n").utf8))
            s.drawn = false
        }
    }

    /// The phase in progress: redrawn on a terminal, logged at most every few seconds otherwise.
    func phase(_ progress: PhaseProgress) {
        state.withLock { s in
            if terminal {
                let width = max(20, Self.columns() - 1)
                let text = progress.line.count > width ? String(progress.line.prefix(width - 1)) + "…" : progress.line
                FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
                s.drawn = true
            } else {
                let now = DispatchTime.now().uptimeNanoseconds
                let phase = "\(progress.variant) \(progress.phaseIndex)"
                if phase != s.loggedPhase {
                    guard progress.wallSeconds >= Self.firstLoggedAfter else { return }
                } else {
                    guard now - s.logged >= Self.loggedEvery else { return }
                }
                (s.loggedPhase, s.logged) = (phase, now)
                FileHandle.standardError.write(Data(("  " + progress.line + "\n").utf8))
            }
        }
    }

    static func columns() -> Int {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 100 }
        return Int(size.ws_col)
    }
}

/// stderr's progress and messages.
let progressOutput = ProgressOutput(terminal: isatty(2) == 1)

/// Ctrl-C or SIGTERM during a run (Docs/workbench.md "Ctrl-C"). The first says at once what happens and stops the
/// variant in progress at its next chunk or operation; the run writes what ran (that variant marked partial) and
/// exits 130. A second moves the report of the finished variants into place and exits 130 at once; a third ends the
/// process from the signal handler itself.
enum StopSignals {
    /// The pipe's write end: the handler writes a byte per signal, which the watcher thread reads.
    private static let writeEnd = Atomic<Int32>(-1)
    private static let received = Atomic<Int>(0)
    private static let installed = Atomic<Bool>(false)

    static func install() {
        guard !installed.exchange(true, ordering: .relaxed) else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        writeEnd.store(fds[1], ordering: .relaxed)
        _ = received.load(ordering: .relaxed)
        let readEnd = fds[0]
        let watcher = Thread {
            var byte: UInt8 = 0
            var seen = 0
            while read(readEnd, &byte, 1) == 1 {
                seen += 1
                if seen == 1 { stopAtNextChunk() } else { quitNow() }
            }
        }
        watcher.name = "signals"
        watcher.start()
        // A parent may start us with these signals blocked (they stay pending, never handled): unblock them in the
        // main thread, where the run's threads inherit the mask from.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for sig in [SIGINT, SIGTERM] { sigaddset(&unblocked, sig) }
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        for sig in [SIGINT, SIGTERM] {
            // Only async-signal-safe work here: atomics, write(2), _exit(2).
            signal(sig) { _ in
                Suite.stopRequested.store(true, ordering: .relaxed)
                if StopSignals.received.add(1, ordering: .relaxed).newValue >= 3 { _exit(130) }
                var byte: UInt8 = 1
                _ = write(StopSignals.writeEnd.load(ordering: .relaxed), &byte, 1)
            }
        }
    }

    private static func stopAtNextChunk() {
        let what = Suite.variantInProgress.map { "stopping \($0) at its next chunk" } ?? "stopping at the next chunk"
        progressOutput.line("interrupted: \(what); finished variants are kept, the stopped one is marked partial. Ctrl-C again to quit now.")
    }

    private static func quitNow() {
        let kept = Suite.keepFinishedNow()
        progressOutput.line("interrupted again: quitting now" + (kept.map { "; the finished variants are in \($0.path)" } ?? ""))
        fflush(nil)
        _exit(130)
    }
}
