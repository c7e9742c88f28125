import Foundation
import ModelSchema

/// Reads the model an app keeps in Xcode: a `.xcdatamodeld` bundle of versions, or a single `.xcdatamodel`.
///
/// Core Data's own API loads the compiled form of these (`.mom` / `.momd`, which Xcode's `momc` writes into the
/// app); this reads the source Xcode edits, so that a model can be loaded where no `momc` runs.
/// Docs/coredata-behaviour.md §15 says what is read, what is left out and why.
///
/// ```swift
/// let reading = try XcodeModelReader.read(at: URL(fileURLWithPath: "App/Shop.xcdatamodeld"))
/// for skipped in reading.skipped { print(skipped) }   // what the model has that is not carried over
/// let model = try ManagedObjectModel(file: reading.model)
/// ```
public enum XcodeModelReader {
    /// The key of a bundle's `.xccurrentversion` property list that names the current version.
    static let currentVersionKey = "_XCCurrentVersionName"

    /// Reads the Xcode model at `url`.
    ///
    /// A `.xcdatamodeld` bundle gives every `.xcdatamodel` inside as ``ModelFile/versions``, ordered by name with
    /// runs of digits compared as numbers (`Shop`, `Shop 2`, …, `Shop 10`), and the one its `.xccurrentversion`
    /// names as ``ModelFile/current`` (without the `.xcdatamodel` extension; with no `.xccurrentversion`, the last).
    /// A `.xcdatamodel` folder gives its entities and configurations.
    /// - Throws: ``XcodeModelError`` naming the path, and the line for what is wrong in the XML: a path that is not
    ///   an Xcode model, a version folder without `contents`, XML that is not a model, a bundle with no version, a
    ///   current version that is not in the bundle, or an element that cannot be left out (§15.3).
    public static func read(at url: URL) throws -> XcodeModelReading {
        let url = url.standardizedFileURL
        switch url.pathExtension {
        case "xcdatamodeld": return try readBundle(url)
        case "xcdatamodel":
            var reading = try readVersion(url, name: "")
            reading.skipped += mappingModels(beside: url)
            return reading
        case "mom", "momd":
            throw XcodeModelError(path: url.path, "a compiled model (what momc writes into an app); give the .xcdatamodeld or .xcdatamodel Xcode edits")
        default:
            throw XcodeModelError(path: url.path, "not an Xcode model: expected a .xcdatamodeld bundle or a .xcdatamodel folder")
        }
    }

    private static func readBundle(_ url: URL) throws -> XcodeModelReading {
        try requireFolder(url)
        let entries = try contents(of: url)
        let versionNames = entries.filter { $0.hasSuffix(".xcdatamodel") }.map { String($0.dropLast(".xcdatamodel".count)) }
            .sorted(by: precedesByName)
        guard !versionNames.isEmpty else {
            throw XcodeModelError(path: url.path, "the bundle holds no .xcdatamodel version")
        }
        var current: String?
        let plist = url.appendingPathComponent(".xccurrentversion")
        if FileManager.default.fileExists(atPath: plist.path) {
            current = try currentVersionName(in: plist)
            guard let name = current, versionNames.contains(name) else {
                throw XcodeModelError(path: plist.path, "the current version '\(current ?? "")' is not in the bundle (versions: \(versionNames.joined(separator: ", ")))")
            }
        }
        var versions: [ModelFile.Version] = []
        var reading = XcodeModelReading(model: ModelFile(versions: []), skipped: [])
        for name in versionNames {
            let one = try readVersion(url.appendingPathComponent(name + ".xcdatamodel"), name: name)
            versions.append(ModelFile.Version(name: name, entities: one.model.entities, configurations: one.model.configurations))
            reading.skipped += one.skipped
            reading.lines.merge(one.lines) { first, _ in first }
            reading.files.merge(one.files) { first, _ in first }
        }
        for entry in entries where entry.hasSuffix(".xcmappingmodel") || entry.hasSuffix(".mom") || entry.hasSuffix(".momd") {
            reading.skipped.append(skippedFile(url.appendingPathComponent(entry)))
        }
        reading.skipped += mappingModels(beside: url)
        reading.model = ModelFile(versions: versions, current: current ?? versionNames.last)
        return reading
    }

    /// One version folder's `contents`, as a model without versions.
    private static func readVersion(_ url: URL, name: String) throws -> XcodeModelReading {
        try requireFolder(url)
        let file = url.appendingPathComponent("contents")
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw XcodeModelError(path: url.path, "the version folder has no 'contents' file")
        }
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            throw XcodeModelError(path: file.path, "cannot read: \(error.localizedDescription)")
        }
        let root = try XMLNode.parse(data, path: file.path)
        var reader = ContentsReader(path: file.path, version: name)
        let (entities, configurations) = try reader.read(root)
        var model = ModelFile(entities: entities)
        model.configurations = configurations
        var reading = XcodeModelReading(model: model, skipped: reader.skipped)
        reading.lines = reader.lines
        reading.files = [name: file.path]
        return reading
    }

    /// The current version's name from a `.xccurrentversion` property list, without its `.xcdatamodel` extension.
    private static func currentVersionName(in plist: URL) throws -> String {
        let dictionary: [String: Any]?
        do {
            dictionary = try PropertyListSerialization.propertyList(from: try Data(contentsOf: plist), format: nil) as? [String: Any]
        } catch {
            throw XcodeModelError(path: plist.path, "not a property list: \(error.localizedDescription)")
        }
        guard let value = dictionary?[currentVersionKey] as? String else {
            throw XcodeModelError(path: plist.path, "has no \(currentVersionKey) string")
        }
        return value.hasSuffix(".xcdatamodel") ? String(value.dropLast(".xcdatamodel".count)) : value
    }

    /// The mapping models in the folder that holds `url`: Core Data uses them in a migration, this library infers
    /// every mapping (Docs/coredata-behaviour.md §7), so each is listed.
    private static func mappingModels(beside url: URL) -> [XcodeModelReading.Skipped] {
        let folder = url.deletingLastPathComponent()
        return ((try? contents(of: folder)) ?? []).filter { $0.hasSuffix(".xcmappingmodel") }.map { skippedFile(folder.appendingPathComponent($0)) }
    }

    private static func skippedFile(_ url: URL) -> XcodeModelReading.Skipped {
        let why = url.pathExtension == "xcmappingmodel"
            ? "a custom mapping model is not modelled: a migration here is always the inferred (lightweight) one"
            : "a compiled model is not read; the .xcdatamodel versions beside it are the source"
        return .init(file: url.path, line: nil, element: url.lastPathComponent, why: why)
    }

    private static func requireFolder(_ url: URL) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw XcodeModelError(path: url.path, "no such file or folder")
        }
        guard isDirectory.boolValue else {
            throw XcodeModelError(path: url.path, "a file where Xcode keeps a folder (a .\(url.pathExtension) is a folder)")
        }
    }

    /// The names in `folder`, sorted, so that what is read and listed does not depend on the file system's order.
    private static func contents(of folder: URL) throws -> [String] {
        do { return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() } catch {
            throw XcodeModelError(path: folder.path, "cannot list: \(error.localizedDescription)")
        }
    }

    /// Whether version name `a` comes before `b`: compared piece by piece, runs of digits by their value (`Shop 2`
    /// before `Shop 10`), the rest by their characters; a name that is the start of another comes first.
    static func precedesByName(_ a: String, _ b: String) -> Bool {
        func pieces(_ s: String) -> [Substring] {
            var result: [Substring] = []
            var start = s.startIndex
            while start < s.endIndex {
                let digits = s[start].isASCII && s[start].isNumber
                var end = s.index(after: start)
                while end < s.endIndex, (s[end].isASCII && s[end].isNumber) == digits { end = s.index(after: end) }
                result.append(s[start..<end])
                start = end
            }
            return result
        }
        for (x, y) in zip(pieces(a), pieces(b)) where x != y {
            if let m = Int(x), let n = Int(y), m != n { return m < n }
            return x < y
        }
        return pieces(a).count < pieces(b).count
    }
}
