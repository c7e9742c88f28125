import Foundation
import ModelSchema
import ObjectGraph
import Testing
@testable import XcodeModel

/// What the reader makes of Xcode's model source: versions, entities, attributes, relationships, indexes,
/// constraints and configurations (Docs/coredata-behaviour.md §15).
@Suite struct XcodeModelReaderTests {
    @Test("A bundle gives every version ordered by name and names the current one from .xccurrentversion")  // §15.1
    func bundleVersions() throws {
        let reading = try XcodeModelReader.read(at: Fixtures.shop)
        #expect(reading.model.versions?.map(\.name) == ["Shop", "Shop 2"])
        #expect(reading.model.current == "Shop 2")
        #expect(reading.model.entities.isEmpty)
        let model = try ManagedObjectModel(xcodeModelAt: Fixtures.shop)
        #expect(model.versionName == "Shop 2")
        #expect(model.previousVersions.map(\.versionName) == ["Shop"])
    }

    @Test("The Shop bundle reads to the model file its JSON twin decodes to")  // §15.2
    func shopMatchesJSON() throws {
        let reading = try XcodeModelReader.read(at: Fixtures.shop)
        let json = try JSONDecoder().decode(ModelFile.self, from: Data(contentsOf: Fixtures.folder.appendingPathComponent("Shop.json")))
        if reading.model != json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            Issue.record("read:\n\(String(decoding: try encoder.encode(reading.model), as: UTF8.self))")
        }
        #expect(reading.model == json)
        #expect(reading.skipped.isEmpty)
    }

    @Test("The reader sets ordered, transformable, configurations, class names and renaming identifiers in the model file")  // §15.2
    func shopFields() throws {
        let versions = try #require(try XcodeModelReader.read(at: Fixtures.shop).model.versions)
        let current = versions[1]
        func entity(_ name: String) throws -> ModelFile.Entity { try #require(current.entities.first { $0.name == name }) }
        let lines = try #require(try entity("Order").relationships?.first)
        #expect(lines.ordered == true && lines.toMany == true && lines.deleteRule == .cascade && lines.inverse == "order")
        let tags = try #require(try entity("Product").attributes?.first { $0.name == "tags" })
        #expect(tags.type == .transformable)
        #expect(tags.valueTransformerName == "NSSecureUnarchiveFromDataTransformer")
        #expect(tags.customClassName == "[String]")
        #expect(current.configurations == [.init(name: "Catalog", entities: ["Album", "Book", "Product"]), .init(name: "Orders", entities: ["Order", "OrderLine"])])
        #expect(try entity("Book").parent == "Product" && entity("Product").abstract == true)
        #expect(try entity("Book").representedClassName == "Book")
        #expect(try entity("OrderLine").attributes?.first { $0.name == "units" }?.renamingIdentifier == "quantity")
        #expect(try entity("Album").attributes?.first { $0.name == "cover" }?.allowsExternalBinaryDataStorage == true)
        #expect(try entity("Product").attributes?.first { $0.name == "sku" }?.regularExpression == "[A-Z0-9-]+")
    }

    @Test("Every attribute type, default, range and flag, and every relationship field, of a single .xcdatamodel is read")  // §15.2
    func libraryFields() throws {
        let model = try XcodeModelReader.read(at: Fixtures.library).model
        #expect(model.versions == nil)
        #expect(model.configurations == [.init(name: "Everything", entities: ["Author", "Note", "Volume"])])
        let author = try #require(model.entities.first)
        #expect(author.renamingIdentifier == "Writer" && author.versionHashModifier == "split names")
        let attributes = Dictionary(uniqueKeysWithValues: (author.attributes ?? []).map { ($0.name, $0) })
        #expect(attributes.keys.sorted() == ["born", "homepage", "id", "metadata", "name", "portrait", "prizes", "rating", "ratio", "royalties",
                                             "sales", "shelfMark", "verified"])
        #expect(attributes.mapValues(\.type) == [
            "born": .date, "homepage": .uri, "id": .uuid, "metadata": .transformable, "name": .string, "portrait": .binaryData,
            "prizes": .integer16, "rating": .float, "ratio": .double, "royalties": .decimal, "sales": .integer64, "shelfMark": .integer32,
            "verified": .boolean,
        ])
        // Dates' bounds are seconds since 2001-01-01; a String's or Binary's bounds are lengths; a number's are values.
        #expect(attributes["born"]?.minValue == -3155760000 && attributes["born"]?.maxValue == 0)
        #expect(attributes["portrait"]?.maxLength == 1000000 && attributes["portrait"]?.maxValue == nil)
        #expect(attributes["rating"]?.minValue == 0 && attributes["rating"]?.maxValue == 5 && attributes["rating"]?.defaultValue == .number(2.5))
        #expect(attributes["royalties"]?.defaultValue == .string("12.50"))
        #expect(attributes["verified"]?.defaultValue == .bool(true) && attributes["verified"]?.optional == false)
        #expect(attributes["id"]?.defaultValue == nil)  // Xcode's empty default of a UUID is no default
        #expect(attributes["name"]?.defaultValue == .string("Anonymous"))
        #expect(attributes["name"]?.indexed == true && attributes["name"]?.preservesValueInHistoryOnDeletion == true)
        #expect(attributes["metadata"]?.valueTransformerName == nil && attributes["born"]?.optional == nil)
        let relationships = Dictionary(uniqueKeysWithValues: (author.relationships ?? []).map { ($0.name, $0) })
        #expect(relationships["volumes"]?.deleteRule == .deny && relationships["volumes"]?.maxCount == 50 && relationships["volumes"]?.minCount == nil)
        #expect(relationships["reading"]?.transient == true && relationships["reading"]?.toMany == true)
        let note = try #require(model.entities.first { $0.name == "Note" })
        #expect(note.relationships?.first?.deleteRule == .noAction && note.relationships?.first?.optional == false)
        #expect(note.attributes?.first?.minLength == 1)
        let volume = try #require(model.entities.first { $0.name == "Volume" })
        #expect(volume.attributes?.first?.renamingIdentifier == "name")
        #expect(volume.relationships?.first { $0.name == "notes" }?.renamingIdentifier == "comments")
        #expect(volume.fetchIndexes == [
            .init(name: "byYearTitle", elements: [.init(property: "year", ascending: false), .init(property: "title")]),
            .init(name: "compoundIndex1", elements: [.init(property: "title"), .init(property: "year")]),
        ])
        _ = try ManagedObjectModel(xcodeModelAt: Fixtures.library)
    }

    @Test("What is not modelled and never stored is listed once with its file and line, and the load goes on")  // §15.3
    func libraryListing() throws {
        let reading = try XcodeModelReader.read(at: Fixtures.library)
        let contents = Fixtures.library.appendingPathComponent("contents").standardizedFileURL.path
        #expect(reading.skipped.map(\.file) == Array(repeating: contents, count: 6))
        #expect(reading.skipped.map(\.line) == [9, 19, 24, 27, 45, 55])
        #expect(reading.skipped.map(\.element) == [
            "<userInfo> in attribute 'name' of entity 'Author'",
            "<attribute name=\"scratch\"> in entity 'Author'",
            "<fetchedProperty name=\"recentVolumes\"> in entity 'Author'",
            "<userInfo> in entity 'Author'",
            "<fetchIndex name=\"byTitleLength\"> in entity 'Volume'",
            "<fetchRequest name=\"LongVolumes\">",
        ])
        #expect(reading.skipped.allSatisfy { !$0.why.isEmpty })
    }

    @Test("Versions are ordered by name with numbers compared by value; without .xccurrentversion the last is current")  // §15.1
    func versionOrder() throws {
        let scratch = try Scratch()
        for name in ["Notes 10", "Notes", "Notes 2"] { try scratch.model("Notes.xcdatamodeld/\(name).xcdatamodel", noteAndTag()) }
        let url = scratch.folder.appendingPathComponent("Notes.xcdatamodeld")
        let reading = try XcodeModelReader.read(at: url)
        #expect(reading.model.versions?.map(\.name) == ["Notes", "Notes 2", "Notes 10"])
        #expect(reading.model.current == "Notes 10")
        try scratch.currentVersion("Notes.xcdatamodeld", "Notes 2")
        #expect(try XcodeModelReader.read(at: url).model.current == "Notes 2")
    }

    @Test("Mapping models in the bundle or beside it, unknown elements and unknown attributes are listed, and the load goes on")  // §15.4
    func unknownsListed() throws {
        let scratch = try Scratch()
        try scratch.model("Notes.xcdatamodeld/Notes.xcdatamodel", noteAndTag(extra: #"<attribute name="body" optional="YES" attributeType="String" storedInTruthFile="YES"/><sparkle/>"#))
        try scratch.write("Notes.xcdatamodeld/Inside.xcmappingmodel/xcmapping.xml", "<model/>")
        try scratch.write("Beside.xcmappingmodel/xcmapping.xml", "<model/>")
        let reading = try XcodeModelReader.read(at: scratch.folder.appendingPathComponent("Notes.xcdatamodeld"))
        #expect(reading.skipped.map(\.element) == [
            "attribute 'storedInTruthFile' of attribute 'body' of entity 'Note'", "<sparkle> in entity 'Note'",
            "Inside.xcmappingmodel", "Beside.xcmappingmodel",
        ])
        #expect(reading.skipped.map(\.line) == [5, 5, nil, nil])
        #expect(reading.model.versions?.first?.entities.first?.attributes?.map(\.name) == ["title", "body"])
    }

    /// A model `body` that is refused, the error's path (its end), line and a piece of its message.
    struct Refusal: Sendable, CustomStringConvertible {
        var description: String
        var body: String
        var line: Int
        var message: String
    }

    static let refusals: [Refusal] = [
        Refusal(description: "a relationship without an inverse", body: noteAndTag(extra: #"<relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Tag"/>"#),
                line: 5, message: "relationship 'owner' of entity 'Note' has no inverse"),
        Refusal(description: "a derived attribute", body: noteAndTag(extra: #"<attribute name="upper" optional="YES" attributeType="String" derived="YES" derivationExpression="uppercase:(title)"/>"#),
                line: 5, message: "attribute 'upper' of entity 'Note' is derived"),
        Refusal(description: "a stored Undefined attribute", body: noteAndTag(extra: #"<attribute name="any" optional="YES" attributeType="Undefined"/>"#),
                line: 5, message: "is of type Undefined"),
        Refusal(description: "a stored Composite attribute", body: noteAndTag(extra: #"<attribute name="place" optional="YES" attributeType="Composite" composite="Address"/>"#),
                line: 5, message: "is of type Composite"),
        Refusal(description: "a stored Object ID attribute", body: noteAndTag(extra: #"<attribute name="link" optional="YES" attributeType="Object ID"/>"#),
                line: 5, message: "is of type Object ID"),
        Refusal(description: "an attribute type Xcode does not write", body: noteAndTag(extra: #"<attribute name="n" attributeType="Integer 8"/>"#),
                line: 5, message: "attributeType 'Integer 8'"),
        Refusal(description: "a delete rule Xcode does not write", body: noteAndTag(extra: #"<relationship name="x" optional="YES" maxCount="1" deletionRule="Purge" destinationEntity="Tag" inverseName="notes" inverseEntity="Tag"/>"#),
                line: 5, message: "deletionRule 'Purge'"),
        Refusal(description: "a default that is not a number", body: noteAndTag(extra: #"<attribute name="n" attributeType="Integer 16" defaultValueString="many" usesScalarValueType="YES"/>"#),
                line: 5, message: "defaultValueString 'many', not a number"),
        Refusal(description: "a configuration naming a missing entity", body: noteAndTag() + #"<configuration name="Cloud"><memberEntity name="Ghost"/></configuration>"#,
                line: 11, message: "configuration 'Cloud' names entity 'Ghost'"),
        Refusal(description: "XML that is not well formed", body: noteAndTag(extra: #"<attribute name="broken" attributeType="String"></attr>"#),
                line: 5, message: "not an Xcode model's XML"),
    ]

    @Test("An element that cannot be left out, or is wrong, fails with the file and its line", arguments: refusals)  // §15.3
    func refusedElement(_ refusal: Refusal) throws {
        let scratch = try Scratch()
        let url = try scratch.model("Notes.xcdatamodel", refusal.body)
        let error = try #require(throws: XcodeModelError.self) { try XcodeModelReader.read(at: url) }
        #expect(error.path == url.appendingPathComponent("contents").standardizedFileURL.path)
        #expect(error.line == refusal.line, "\(error)")
        #expect(error.message.contains(refusal.message), "\(error)")
    }

    @Test("A path that is not what it claims fails naming the path")  // §15.1
    func refusedPaths() throws {
        let scratch = try Scratch()
        func refusal(_ url: URL) throws -> XcodeModelError {
            try #require(throws: XcodeModelError.self) { try XcodeModelReader.read(at: url) }
        }
        let file = try scratch.write("File.xcdatamodel", "<model/>")
        #expect(try refusal(file).message.contains("a file where Xcode keeps a folder"))
        let empty = try scratch.folder("Empty.xcdatamodel")
        #expect(try refusal(empty) == XcodeModelError(path: empty.standardizedFileURL.path, "the version folder has no 'contents' file"))
        let text = try scratch.write("Text.xcdatamodel/contents", "Shop, a model")
        #expect(try refusal(text.deletingLastPathComponent()).message.contains("not an Xcode model's XML"))
        let other = try scratch.write("Other.xcdatamodel/contents", "<?xml version=\"1.0\"?>\n<plist/>")
        #expect(try refusal(other.deletingLastPathComponent()).line == 2)
        let bundle = try scratch.folder("None.xcdatamodeld")
        #expect(try refusal(bundle) == XcodeModelError(path: bundle.standardizedFileURL.path, "the bundle holds no .xcdatamodel version"))
        try scratch.model("Lost.xcdatamodeld/Lost.xcdatamodel", noteAndTag())
        try scratch.currentVersion("Lost.xcdatamodeld", "Lost 2")
        let lost = try refusal(scratch.folder.appendingPathComponent("Lost.xcdatamodeld"))
        #expect(lost.path.hasSuffix("Lost.xcdatamodeld/.xccurrentversion") && lost.message.contains("'Lost 2' is not in the bundle"))
        #expect(try refusal(scratch.folder("Shop.momd")).message.contains("a compiled model"))
        #expect(try refusal(scratch.write("Shop.json", "{}")).message.contains("not an Xcode model"))
        #expect(try refusal(scratch.folder.appendingPathComponent("Missing.xcdatamodel")).message == "no such file or folder")
    }

    @Test("A model the library refuses names the file and line of the entity or property at fault")  // §15.3
    func refusedModel() throws {
        let scratch = try Scratch()
        try scratch.model("Notes.xcdatamodeld/Notes.xcdatamodel", noteAndTag())
        try scratch.model("Notes.xcdatamodeld/Notes 2.xcdatamodel", noteAndTag(extra: #"<relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="notes" inverseEntity="Person"/>"#))
        let url = scratch.folder.appendingPathComponent("Notes.xcdatamodeld")
        _ = try XcodeModelReader.read(at: url)  // the XML is fine; the model is not
        let error = try #require(throws: XcodeModelError.self) { try ManagedObjectModel(xcodeModelAt: url) }
        #expect(error.path.hasSuffix("Notes.xcdatamodeld/Notes 2.xcdatamodel/contents"), "\(error)")
        #expect(error.line == 5, "\(error)")
        #expect(error.message.contains("Note.owner"), "\(error)")
    }
}

/// Where the reader's files live in the package: the workbench's example model, and the module boundary.
@Suite struct XcodeModelPackageTests {
    /// The package root (this file is Tests/XcodeModelTests/XcodeModelReaderTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("The workbench's example model Scenarios/models/Shop.xcdatamodeld is the test fixture, byte for byte")
    func exampleIsFixture() throws {
        let example = Self.root.appendingPathComponent("Scenarios/models/Shop.xcdatamodeld")
        for file in [".xccurrentversion", "Shop.xcdatamodel/contents", "Shop 2.xcdatamodel/contents"] {
            #expect(try Data(contentsOf: example.appendingPathComponent(file)) == Data(contentsOf: Fixtures.shop.appendingPathComponent(file)), "\(file)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: example.path).sorted() == FileManager.default.contentsOfDirectory(atPath: Fixtures.shop.path).sorted())
    }

    @Test("Only XcodeModel imports Foundation's XML parser: ObjectGraph and ModelSchema do not link it")
    func xmlStaysInItsTarget() throws {
        for module in ["ObjectGraph", "ModelSchema"] {
            let folder = Self.root.appendingPathComponent("Sources/\(module)")
            let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }.sorted()
            #expect(!files.isEmpty)
            for file in files {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                #expect(!text.contains("import FoundationXML"), "\(module)/\(file)")
            }
        }
    }
}
