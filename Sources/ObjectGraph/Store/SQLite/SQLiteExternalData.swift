import Foundation

/// The values of attributes that allow external binary storage, as the SQLite store keeps them
/// (Docs/coredata-behaviour.md §13.5).
///
/// The column of such an attribute holds a marker byte, then either the value (`0x01`, inline) or the name of the
/// file that holds it (`0x02`, then the file's UUID in ASCII). A value larger than ``threshold`` goes to a file in
/// `.<store name>_SUPPORT/_EXTERNAL_DATA/` beside the store, written before the save's transaction commits; a file a
/// committed save replaced or deleted is removed after the commit, and a file a failed save wrote is removed with
/// its rollback. A kill between writing a file and the commit leaves the file with no row: opening the store removes
/// such files.
struct SQLiteExternalData {
    /// Values above this many bytes go to a file: 100 KiB, the size developers report (Docs/coredata-behaviour.md §13.5).
    static let threshold = 100 * 1024
    static let inlineMarker: UInt8 = 0x01
    static let externalMarker: UInt8 = 0x02

    /// `.<store name>_SUPPORT/_EXTERNAL_DATA/`, beside the store file.
    let directory: URL

    init(storeURL: URL) {
        let name = storeURL.deletingPathExtension().lastPathComponent
        directory = storeURL.deletingLastPathComponent()
            .appendingPathComponent(".\(name)_SUPPORT", isDirectory: true)
            .appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
    }

    /// The files a save wrote and the files it made unreferenced, removed after it commits or rolls back.
    struct Changes {
        var written: [String] = []
        var replaced: [String] = []
    }

    /// What the column keeps for `value`: nil stays NULL; data gets its marker, and goes to a new file (recorded in
    /// `changes`) when larger than ``threshold``.
    func rowValue(_ value: PropertyValue, changes: inout Changes) throws -> PropertyValue {
        guard case .data(let data) = value else { return value }
        guard data.count > Self.threshold else { return .data(Data([Self.inlineMarker]) + data) }
        let name = UUID().uuidString
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try data.write(to: directory.appendingPathComponent(name), options: .atomic)
        changes.written.append(name)
        return .data(Data([Self.externalMarker]) + Data(name.utf8))
    }

    /// The values of a decoded row's external-storage `slots`, read from what their columns hold.
    func resolve(_ values: inout [PropertyValue], slots: [Int]) {
        for slot in slots { values[slot] = value(ofColumn: values[slot]) }
    }

    /// The value a column holds: the inline bytes, or the file's; nil when the file is missing.
    func value(ofColumn stored: PropertyValue) -> PropertyValue {
        guard case .data(let bytes) = stored, let marker = bytes.first else { return stored }
        let rest = bytes.dropFirst()
        switch marker {
        case Self.inlineMarker: return .data(Data(rest))
        case Self.externalMarker:
            let file = directory.appendingPathComponent(String(decoding: rest, as: UTF8.self))
            return (try? Data(contentsOf: file)).map { .data($0) } ?? .null
        default: return stored
        }
    }

    /// The file a column's bytes refer to, if they refer to one.
    static func fileName(ofColumn bytes: Data) -> String? {
        guard bytes.first == externalMarker else { return nil }
        return String(decoding: bytes.dropFirst(), as: UTF8.self)
    }

    /// Removes files by name; one already gone is no error.
    func remove(_ names: [String]) {
        for name in names { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }

    /// Removes the files no row refers to (left by a kill between a file's write and its save's commit).
    func removeOrphans(referenced: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        remove(names.filter { !referenced.contains($0) }.sorted())
    }
}
