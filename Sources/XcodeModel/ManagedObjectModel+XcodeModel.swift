import Foundation
import ModelSchema
import ObjectGraph

extension ManagedObjectModel {
    /// Loads the model an app keeps in Xcode: a `.xcdatamodeld` bundle (its current version, the others as
    /// ``ManagedObjectModel/previousVersions`` for a lightweight migration) or a single `.xcdatamodel`.
    ///
    /// Named for what it reads: Core Data's `NSManagedObjectModel(contentsOf:)` loads the compiled `.mom` / `.momd`
    /// that Xcode builds into an app, which this does not read. What the model has that this library does not
    /// model is left out where that changes nothing; ``XcodeModelReader/read(at:)`` lists it
    /// (Docs/coredata-behaviour.md §15).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(xcodeModelAt: URL(fileURLWithPath: "App/Shop.xcdatamodeld"))
    /// ```
    /// - Parameters:
    ///   - url: the `.xcdatamodeld` or `.xcdatamodel`.
    ///   - classes: the class to instantiate for each entity that has one, by entity name.
    /// - Throws: ``XcodeModelError`` naming the file, and the line of the entity or property at fault.
    public convenience init(xcodeModelAt url: URL, classes: [String: ManagedObject.Type] = [:]) throws {
        let reading = try XcodeModelReader.read(at: url)
        // Delegation cannot sit in a closure, so the location is found here as ``XcodeModelReading/check(at:classes:)`` finds it.
        do {
            try self.init(file: reading.model, classes: classes)
        } catch let error as ModelError {
            throw reading.locate(error, classes: classes, at: url)
        }
    }
}

extension XcodeModelReading {
    /// Checks that ObjectGraph loads ``model`` as it stands (a caller that keeps the model file, such as the
    /// workbench's scenario loader, checks it before using it).
    /// - Throws: ``XcodeModelError`` with the `contents` file and line of the entity or property at fault.
    public func check(at url: URL, classes: [String: ManagedObject.Type] = [:]) throws {
        do { _ = try ManagedObjectModel(file: model, classes: classes) } catch let error as ModelError {
            throw locate(error, classes: classes, at: url)
        }
    }

    /// `error`, refused by a model built from ``model``, with the file and line of the entity or property it names:
    /// each version is built alone to find the one at fault (the error does not say).
    func locate(_ error: ModelError, classes: [String: ManagedObject.Type], at url: URL) -> XcodeModelError {
        let versions = model.versions ?? [ModelFile.Version(name: "", entities: model.entities)]
        for version in versions {
            do { _ = try ManagedObjectModel(file: ModelFile(entities: version.entities), classes: classes) } catch let found as ModelError {
                guard let file = files[version.name] else { break }
                let line = found.entity.flatMap { entity in
                    lines[Place(version: version.name, entity: entity, property: found.property)] ?? lines[Place(version: version.name, entity: entity)]
                }
                return XcodeModelError(path: file, line: line, found.description)
            } catch {
                break
            }
        }
        return XcodeModelError(path: url.standardizedFileURL.path, error.description)
    }
}
