import ArgumentParser
import Foundation

extension ParsableCommand {
    /// ArgumentParser's own `main`, except that a command-line mistake is bad input: ArgumentParser's message
    /// goes to `report` and the process exits with `badInputExitCode`, not sysexits' 64. Help, a command's
    /// `ExitCode` and every other error exit as ArgumentParser's `exit(withError:)` has them.
    package static func main(badInputExitCode: Int32, reportingTo report: (String) -> Void) {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                report(fullMessage(for: error))
                Foundation.exit(badInputExitCode)
            }
            exit(withError: error)
        }
    }
}
