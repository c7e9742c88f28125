import Foundation
import Testing

/// The committed Xcode models (Fixtures/): the versioned `Shop.xcdatamodeld`, its JSON twin `Shop.json`, and the
/// single `Library.xcdatamodel`.
enum Fixtures {
    static var folder: URL { Bundle.module.resourceURL!.appendingPathComponent("Fixtures", isDirectory: true) }
    static var shop: URL { folder.appendingPathComponent("Shop.xcdatamodeld", isDirectory: true) }
    static var library: URL { folder.appendingPathComponent("Library.xcdatamodel", isDirectory: true) }
}

/// A temporary folder of its own, removed when released, where a test writes the Xcode models it reads.
final class Scratch {
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("xcode-model-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Writes `text` at `path` (relative to the folder), creating the folders above it.
    @discardableResult
    func write(_ path: String, _ text: String) throws -> URL {
        let url = folder.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// Creates the folder `path` (relative to the folder).
    @discardableResult
    func folder(_ path: String) throws -> URL {
        let url = folder.appendingPathComponent(path, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes a `.xcdatamodel` folder at `path` whose `contents` is Xcode's `<model>` around `body`.
    @discardableResult
    func model(_ path: String, _ body: String) throws -> URL {
        try write(path + "/contents", xcodeModel(body))
        return folder.appendingPathComponent(path, isDirectory: true)
    }

    /// Writes a bundle's `.xccurrentversion` naming `version`.
    func currentVersion(_ bundle: String, _ version: String) throws {
        try write(bundle + "/.xccurrentversion", """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>_XCCurrentVersionName</key>
        \t<string>\(version).xcdatamodel</string>
        </dict>
        </plist>
        """)
    }
}

/// Xcode's `contents` file around `body` (entities and the rest), as Xcode writes it: `body` starts on line 3.
func xcodeModel(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22522" systemVersion="23A344" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
    \(body)
    </model>
    """
}

/// Two entities related both ways, for tests that add one element to a valid model: `extra` goes inside `Note`
/// (line 5 of the file).
func noteAndTag(extra: String = "") -> String {
    """
    <entity name="Note" representedClassName="Note" syncable="YES" codeGenerationType="class">
        <attribute name="title" optional="YES" attributeType="String"/>
        \(extra)
        <relationship name="tag" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Tag" inverseName="notes" inverseEntity="Tag"/>
    </entity>
    <entity name="Tag" representedClassName="Tag" syncable="YES" codeGenerationType="class">
        <attribute name="name" optional="YES" attributeType="String"/>
        <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="tag" inverseEntity="Note"/>
    </entity>
    """
}
