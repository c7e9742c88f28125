import Foundation
import Testing

/// Code, tests and docs say what is and why, never how it came to be: the story and its figures belong in the
/// commit message and the benchmark log (Benchmarks/LOG.md), where they stay true of the commit they describe.
///
/// Each `.swift`, `.md`, `.yaml`, `.yml` and `.txt` file under the folder (or the file) given is read line by line,
/// and a line is reported, as `path:line: text`, when it matches one of these, ignoring case:
/// - `issue [0-9]`: an issue number (the tracker's history, not the code's reason);
/// - `item [0-9]+:`: an item of an issue's list;
/// - a round of work: `round` after an ordinal ("fifth", "9th") or after this, last, next, previous, earlier, later,
///   or `round` followed by a number. "Rounds to", "rounding", "round trip" and "round-trip" are ordinary English
///   and pass;
/// - `used to`, unless the word before it is is, are, be, been, being, get, gets or got ("is used to find" says what
///   a thing is for; "used to find" says what the code did once);
/// - `no longer`.
///
/// Not read: golden data (`Fixtures/golden/`, whose bytes are the product's output), `Package.resolved`,
/// `Benchmarks/` (the benchmark log is where the story goes) and this file, which names the patterns.
/// ``allowed`` lists the lines that may match, each with its reason.
@Suite("Sources, Tests and Docs explain the code without its history")
struct HistoryFreeTextTests {
    /// The package root (this file is Tests/WorkbenchTests/HistoryFreeTextTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Lines that may match: a path (relative to the root) and a piece of the line, with why it may.
    static let allowed: [(path: String, contains: String, reason: String)] = [
        ("Sources/ObjectGraph/Store/SQLite/SQLiteStore+History.swift", "names a transaction the history no longer holds",
         "an error message about the token's state at run time, not about the code"),
        ("Sources/ObjectGraph/Context/ManagedObjectContext.swift", "the row no longer exists",
         "an error message about the row's state at run time, not about the code"),
        ("Sources/Workbench/Run/Checks/Oracle.swift", "the store no longer has",
         "an oracle finding about the store's state at the end of a run, not about the code"),
    ]

    static let extensions: Set<String> = ["swift", "md", "yaml", "yml", "txt"]

    /// The files to read under `folder` (or `folder` itself when it is a file), relative to the root, sorted.
    static func files(_ folder: String) -> [String] {
        let url = root.appendingPathComponent(folder)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [folder] }
        let all = FileManager.default.enumerator(atPath: url.path)?.allObjects as? [String] ?? []
        return all.map { "\(folder)/\($0)" }.filter { path in
            extensions.contains((path as NSString).pathExtension)
                && !path.contains("Fixtures/golden/") && !path.hasSuffix("Package.resolved")
                && !path.hasPrefix("Benchmarks/") && !path.hasSuffix("/HistoryFreeTextTests.swift")
        }.sorted()
    }

    /// The patterns above as one expression, for lowercased text. "Used to" is flagged unless one of the words that make it
    /// "serves to" stands before it (one space between).
    static func expression() throws -> NSRegularExpression {
        let ordinals = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|[0-9]+(?:st|nd|rd|th)"
        return try NSRegularExpression(pattern: [
            "issue [0-9]",
            "item [0-9]+:",
            "\\b(?:\(ordinals)|this|last|next|previous|earlier|later) round\\b",
            "\\bround [0-9]+\\b",
            "(?<!\\b(?:is|are|be|been|being|get|gets|got)\\s)\\bused to\\b",
            "\\bno longer\\b",
        ].joined(separator: "|"))
    }

    /// The 1-based numbers of the lines of `text` that tell history, in order, each once.
    static func historyLines(_ text: String, _ expression: NSRegularExpression) -> [Int] {
        let lower = text.lowercased()  // a case-sensitive search of lowercased text is several times faster
        let matches = expression.matches(in: lower, range: NSRange(location: 0, length: lower.utf16.count))
        guard !matches.isEmpty else { return [] }
        let utf16 = Array(lower.utf16)
        var lines: [Int] = []
        var line = 1, scanned = 0
        for match in matches {
            while scanned < match.range.location {
                if utf16[scanned] == 10 { line += 1 }
                scanned += 1
            }
            if lines.last != line { lines.append(line) }
        }
        return lines
    }

    /// Whether `line` tells history by one of the patterns above.
    static func tellsHistory(_ line: String) throws -> Bool {
        !historyLines(line, try expression()).isEmpty
    }

    @Test("The patterns catch history and pass ordinary English")
    func patterns() throws {
        for line in ["// Issue 20 item 6: written as each variant finishes", "(issue 21 item 1)", "callgrind, fifth round",
                     "the 9th round of tuning", "see round 3", "the fetch used to read every row", "Used to find conflicts",
                     "it was used to find", "the row no longer names it"] {
            #expect(try Self.tellsHistory(line), "\(line)")
        }
        for line in ["a store round trip", "a round-trip to the store", "rounds to 0", "rounding down", "is used to find",
                     "are used to judge", "can be used to replay", "three rounds × two sizes", "the item 6 of the list",
                     "issues of SQLite", "round(x)"] {
            #expect(try !Self.tellsHistory(line), "\(line)")
        }
    }

    @Test("No issue numbers, issue items, rounds, \"used to\" or \"no longer\" in the folder", arguments: ["Sources", "Docs", "Tests", "Scenarios", "Profiles", "README.md"])
    func historyFree(folder: String) throws {
        let files = Self.files(folder)
        #expect(!files.isEmpty, "nothing to read under \(folder)")
        let expression = try Self.expression()
        var offending: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let found = Self.historyLines(text, expression)
            guard !found.isEmpty else { continue }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            for number in found where !Self.allowed.contains(where: { file == $0.path && lines[number - 1].contains($0.contains) }) {
                offending.append("\(file):\(number): \(lines[number - 1].trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offending.isEmpty, "\(offending.count) lines tell history instead of what is and why:\n\(offending.joined(separator: "\n"))")
    }

    @Test("Every allowed line is still there, so the list stays short")
    func allowListIsUsed() throws {
        for entry in Self.allowed {
            let text = try String(contentsOf: Self.root.appendingPathComponent(entry.path), encoding: .utf8)
            #expect(text.contains(entry.contains), "\(entry.path) does not have \"\(entry.contains)\" (\(entry.reason)): drop it from the list")
        }
    }
}
