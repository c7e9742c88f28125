import Foundation
import ObjectGraph
import XcodeModel

/// Reads the model file a scenario names (`model: App.json`, or `model: { file: App.json }`; Docs/scenarios.md
/// "A model from a file") into a ``ModelFile``: the one place the workbench turns a path into a model, whatever the
/// file's form.
enum ModelFileReader {
    /// The forms of model file a scenario may name, by the path's extension.
    enum Format: Sendable, Equatable {
        /// A ``ModelFile`` as JSON (ObjectGraph's `ManagedObjectModel(contentsOf:)` reads the same).
        case json
        /// The same keys as YAML.
        case yaml
        /// An Xcode model: a `.xcdatamodeld` bundle of versions, or one `.xcdatamodel` version folder.
        case xcode
    }

    /// Why a model file could not be read: said after the scenario's place that names the file.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The extensions a model path ends with, as the scenario files and the schema spell them.
    static let extensions = ["json", "yaml", "yml", "xcdatamodeld", "xcdatamodel"]

    /// The file's form by its extension (a trailing `/` of a folder aside), or nil when the path names none of
    /// ``extensions`` (a model name such as `workload`, then).
    static func format(of path: String) -> Format? {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        switch (trimmed as NSString).pathExtension.lowercased() {
        case "json": return .json
        case "yaml", "yml": return .yaml
        case "xcdatamodeld", "xcdatamodel": return .xcode
        default: return nil
        }
    }

    /// The path a scenario file names, resolved against the scenario file's folder when relative.
    static func resolve(_ path: String, relativeTo scenarioFile: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        let folder = (scenarioFile as NSString).deletingLastPathComponent
        return folder.isEmpty ? path : (folder as NSString).appendingPathComponent(path)
    }

    /// A model file read: the model, and what an Xcode model has that the library leaves out (each with its file
    /// and line; empty for JSON and YAML).
    struct Reading {
        var file: ModelFile
        var skipped: [String] = []
    }

    /// The model at `path` (already resolved), checked as ObjectGraph loads it: with `versions`, each version's
    /// entities and the `current` one named among them.
    /// - Throws: ``Failure`` saying what the path is instead (missing, a folder, not a model) and where in it.
    static func read(_ path: String) throws -> Reading {
        guard let format = format(of: path) else {
            throw Failure("\(path) is not a model file: give a .json, .yaml, .xcdatamodeld or .xcdatamodel path")
        }
        let file: ModelFile
        switch format {
        case .json, .yaml:
            let text: String
            do { text = try ScenarioLoader.readScenarioText(path, what: "model") } catch let error as ScenarioError {
                throw Failure("\(path): \(error.message)")
            }
            file = try decode(text, format: format, path: path)
        case .xcode:
            return try readXcodeModel(path)
        }
        do { _ = try ManagedObjectModel(file: file) } catch let error as ModelError {
            throw Failure("\(path): \(error.description)")
        }
        return Reading(file: file)
    }

    /// An Xcode model (a `.xcdatamodeld` bundle or one `.xcdatamodel` folder) as a ``ModelFile`` with its versions
    /// and `current` one, read by the XcodeModel target (Docs/coredata-behaviour.md §15); a model ObjectGraph
    /// refuses is refused with the `contents` file and line of the entity or property at fault.
    static func readXcodeModel(_ path: String) throws -> Reading {
        let url = URL(fileURLWithPath: path)
        do {
            let reading = try XcodeModelReader.read(at: url)
            try reading.check(at: url)
            return Reading(file: reading.model, skipped: reading.skipped.map(\.description))
        } catch let error as XcodeModelError {
            throw Failure(error.description)
        }
    }

    /// A JSON or YAML model file's text as a ``ModelFile``.
    static func decode(_ text: String, format: Format, path: String) throws -> ModelFile {
        let data: Data
        if format == .yaml {
            let tree: YAMLTree
            do { tree = try YAMLTree.parse(text, file: path) } catch let error as ScenarioError {
                throw Failure(error.description)
            }
            let reader = Reader(file: path)
            do { data = try JSONSerialization.data(withJSONObject: try reader.jsonObject(Reader.Node(tree: tree, path: ""))) } catch let error as ScenarioError {
                throw Failure(error.description)
            }
        } else {
            data = Data(text.utf8)
        }
        do { return try JSONDecoder().decode(ModelFile.self, from: data) } catch let error as DecodingError {
            throw Failure("\(path): not a model: \(ModelFileDecodingDescription(paths: .keys, namesAttributeTypes: true).describe(error))")
        } catch {
            throw Failure("\(path): not a model (\(format == .json ? "JSON" : "YAML") expected): \(error.localizedDescription)")
        }
    }
}
