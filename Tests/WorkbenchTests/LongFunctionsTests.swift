import Foundation
import Testing

/// `scripts/long-functions` (run by `make test` too): no function in Sources/ runs over 120 lines unless
/// scripts/long-functions.allow names it with a reason, and every entry of that list still names one that does.
@Suite struct LongFunctionsTests {
    @Test("Every function over 120 lines is on the allow-list, and every entry of the list is still over")
    func longFunctionsAreAllowedByName() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("scripts/long-functions").path]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        _ = output.fileHandleForReading.readDataToEndOfFile()
        let complaints = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(complaints)")
    }
}
