import Foundation
import Synchronization
import Testing
import ObjectGraph
import SeededRandom

/// Seeded hostile inputs: mutations of valid seeds (bit flips, truncation, deletion, duplication, token
/// splicing, crossing two seeds) and random token soups and byte strings.
struct Mutator {
    var rng: SeededGenerator
    let seeds: [[UInt8]]
    let tokens: [[UInt8]]

    init(seed: UInt64, seeds: [String], tokens: [String]) {
        rng = SeededGenerator(seed: seed)
        self.seeds = seeds.map { Array($0.utf8) }
        self.tokens = tokens.map { Array($0.utf8) }
    }

    mutating func next() -> String {
        let roll = Int.random(in: 0..<20, using: &rng)
        var bytes: [UInt8]
        switch roll {
        case 0:
            bytes = (0..<Int.random(in: 0...48, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        case 1, 2:
            bytes = []
            for _ in 0..<Int.random(in: 1...16, using: &rng) {
                bytes += tokens.randomElement(using: &rng)!
                if Bool.random(using: &rng) { bytes.append(0x20) }
            }
        case 3:
            bytes = seeds.randomElement(using: &rng)!  // the valid seeds themselves stay in the mix
        default:
            bytes = seeds.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) { mutate(&bytes) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func position(in bytes: [UInt8]) -> Int { Int.random(in: 0...bytes.count, using: &rng) }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        switch Int.random(in: 0..<9, using: &rng) {
        case 0 where !bytes.isEmpty:
            let i = Int.random(in: 0..<bytes.count, using: &rng)
            bytes[i] ^= 1 << UInt8.random(in: 0...7, using: &rng)
        case 1:
            bytes = Array(bytes.prefix(position(in: bytes)))
        case 2 where !bytes.isEmpty:
            let a = position(in: bytes), b = position(in: bytes)
            bytes.removeSubrange(min(a, b)..<max(a, b))
        case 3:
            bytes.insert(contentsOf: tokens.randomElement(using: &rng)!, at: position(in: bytes))
        case 4 where !bytes.isEmpty:
            let a = position(in: bytes), b = position(in: bytes)
            bytes.replaceSubrange(min(a, b)..<max(a, b), with: tokens.randomElement(using: &rng)!)
        case 5 where !bytes.isEmpty:
            let a = position(in: bytes), b = position(in: bytes)
            let slice = Array(bytes[min(a, b)..<max(a, b)])
            bytes.insert(contentsOf: slice, at: position(in: bytes))
        case 6:
            let other = seeds.randomElement(using: &rng)!
            bytes = Array(bytes.prefix(position(in: bytes))) + Array(other.suffix(Int.random(in: 0...other.count, using: &rng)))
        case 7:
            bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position(in: bytes))
        default:
            let interesting: [UInt8] = [0x00, 0x0A, 0x22, 0x27, 0x25, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x28, 0x29, 0x3A, 0x2D, 0xFF]
            bytes.insert(interesting.randomElement(using: &rng)!, at: position(in: bytes))
        }
    }
}

/// How a fuzz target ended: inputs run, accepted, rejected with a clear error, and the unclear ones.
struct FuzzFigures: CustomStringConvertible {
    var target: String
    var runs = 0
    var accepted = 0
    var rejected = 0
    var unclear: [String] = []
    var hang: String?

    var description: String {
        "fuzz \(target): inputs=\(runs) accepted=\(accepted) rejected=\(rejected) unclear=\(unclear.count) hangs=\(hang == nil ? 0 : 1) crashes=0"
    }
}

/// What one input did.
enum FuzzOutcome {
    case accepted
    case rejected
    /// Rejected without a clear error (untyped, or an empty message): the text says what came back.
    case unclear(String)
}

/// Runs `body` over `runs` generated inputs on its own thread. A crash ends the test process (the seed printed
/// first replays it); an input that makes no progress for `stall` seconds is reported as a hang.
func fuzz(
    _ target: String, runs: Int = ReliabilitySettings.fuzzRuns, seed: UInt64 = ReliabilitySettings.fuzzSeed,
    seeds: [String], tokens: [String], stall: Double = 30, body: @escaping @Sendable (String) -> FuzzOutcome
) -> FuzzFigures {
    let tokenList = tokens, seedList = seeds
    return fuzz(target, runs: runs, seed: seed, stall: stall, generator: { seed in
        var mutator = Mutator(seed: seed, seeds: seedList, tokens: tokenList)
        return { mutator.next() }
    }, body: body)
}

/// Runs `body` over `runs` inputs from `generator` (made on the fuzz thread from the seed), as above.
func fuzz(
    _ target: String, runs: Int, seed: UInt64, stall: Double = 30, generator: @escaping @Sendable (UInt64) -> () -> String,
    body: @escaping @Sendable (String) -> FuzzOutcome
) -> FuzzFigures {
    print("fuzz \(target): seed \(seed), \(runs) inputs (FUZZ_SEED=\(seed) FUZZ_RUNS=\(runs) replays them)")
    struct Progress { var done = 0; var current = ""; var figures: FuzzFigures; var finished = false }
    let progress = Mutex(Progress(figures: FuzzFigures(target: target)))
    let thread = Thread {
        let next = generator(seed)
        for _ in 0..<runs {
            let input = next()
            progress.withLock { $0.current = input }
            let outcome = body(input)
            progress.withLock { p in
                p.done += 1
                p.figures.runs += 1
                switch outcome {
                case .accepted: p.figures.accepted += 1
                case .rejected: p.figures.rejected += 1
                case .unclear(let what): p.figures.unclear.append("\(what) for input \(input.debugDescription)")
                }
            }
        }
        progress.withLock { $0.finished = true }
    }
    thread.stackSize = 8 << 20
    thread.start()
    var lastDone = -1
    var lastProgress = Date()
    while true {
        usleep(20_000)
        let (done, finished, current) = progress.withLock { ($0.done, $0.finished, $0.current) }
        if finished { break }
        if done != lastDone {
            lastDone = done
            lastProgress = Date()
        } else if Date().timeIntervalSince(lastProgress) > stall {
            // The worker thread is left behind: the test fails and the process ends with the run.
            var figures = progress.withLock { $0.figures }
            figures.hang = current
            return figures
        }
    }
    return progress.withLock { $0.figures }
}

/// A clear rejection: one of our typed errors, with something to say.
func clarity(of error: any Error, allowed: [any Error.Type]) -> FuzzOutcome {
    let text = String(describing: error)
    guard allowed.contains(where: { type(of: error) == $0 }) else {
        return .unclear("untyped error \(type(of: error)): \(text)")
    }
    guard text.count >= 10 else { return .unclear("error without a message: \(text)") }
    return .rejected
}

func expectClean(_ figures: FuzzFigures, runs: Int = ReliabilitySettings.fuzzRuns) {
    print(figures)
    #expect(figures.hang == nil, "hang on input \(figures.hang?.debugDescription ?? "")")
    #expect(figures.unclear.isEmpty, "\(figures.unclear.prefix(5).joined(separator: "\n"))")
    #expect(figures.runs == runs || figures.hang != nil)
}
