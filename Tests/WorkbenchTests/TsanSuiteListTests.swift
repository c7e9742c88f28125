import Foundation
import Testing

/// `make tsan` runs the suites Tests/tsan-suites.txt names, through an anchored filter the Makefile builds from
/// that list; a name that matches no suite would leave a suite out of ThreadSanitizer without a word.
@Suite("The ThreadSanitizer suite list (Tests/tsan-suites.txt)")
struct TsanSuiteListTests {
    /// The `Target.Suite` lines of the list, comments and blank lines left out.
    static func listed() throws -> [String] {
        try DocsTests.text("Tests/tsan-suites.txt").split(separator: "\n")
            .map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    @Test("Every listed name is Target.Suite, once, and the target's sources declare that suite")
    func everyListedSuiteExists() throws {
        let names = try Self.listed()
        #expect(!names.isEmpty)
        #expect(Set(names).count == names.count, "a suite is listed twice")
        for name in names {
            let parts = name.split(separator: ".")
            try #require(parts.count == 2, "\(name) is not Target.Suite")
            let (target, suite) = (String(parts[0]), String(parts[1]))
            let sources = try DocsTests.files(under: "Tests/\(target)", suffix: ".swift").map(DocsTests.text)
            let declared = sources.contains { $0.contains("struct \(suite) {") }
            #expect(declared, "Tests/tsan-suites.txt names \(name), but Tests/\(target)/ declares no suite \(suite)")
        }
    }

    @Test("make tsan filters by the list, anchored, so a listed name selects no other suite")
    func makefileDerivesAnAnchoredFilter() throws {
        let makefile = try DocsTests.text("Makefile")
        #expect(makefile.contains("Tests/tsan-suites.txt"))
        #expect(makefile.contains("TSAN_FILTER = ^($(TSAN_SUITES))[./]"))
        #expect(makefile.contains("--filter '$(TSAN_FILTER)'"))
    }
}
