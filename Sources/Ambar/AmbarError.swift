import Foundation
import ObjectGraph

/// An error of the Ambar stack.
public struct AmbarError: Error, CustomStringConvertible, Equatable {
    /// What kind of failure.
    public enum Code: String, Sendable {
        /// The model could not be found or read.
        case modelNotFound
        /// The store could not be opened.
        case storeSetup
        /// `editorContext()` while the view context is read-only.
        case viewContextReadOnly
        /// A save from a read-only context in strict mode.
        case readOnlySaveRefused
        /// The 7.x stack was used before it was ready.
        case notReady
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "Ambar \(code.rawValue): \(message)" }
}
