import Foundation
import Testing
@testable import ObjectGraph

// Transformable attributes and string patterns (Docs/coredata-behaviour.md §13). Helpers are prefixed `tf`.

/// Keeps a string reversed and upper-cased, so that a test can tell its bytes from an archive's.
final class TFShoutTransformer: ValueTransformer, @unchecked Sendable {
    override func transformedValue(_ value: Any?) -> Any? {
        (value as? String).map { Data(String($0.uppercased().reversed()).utf8) }
    }

    override func reverseTransformedValue(_ value: Any?) -> Any? {
        (value as? Data).map { String(String(decoding: $0, as: UTF8.self).reversed()) }
    }
}

/// Transforms one way only, which a Transformable cannot use (§13.1).
final class TFOneWayTransformer: ValueTransformer, @unchecked Sendable {
    override class func allowsReverseTransformation() -> Bool { false }
    override func transformedValue(_ value: Any?) -> Any? { (value as? String).map { Data($0.utf8) } }
}

/// A note with typed properties, as an app declares them.
final class TFNote: ManagedObject {
    @Managed("tags") var tags: [String]?
    @Managed("shout") var shout: String?
}

/// A class without secure coding, which the default transformer refuses.
final class TFPlainObject: NSObject {}

func tfModel(pattern: String? = "[A-Z]{2}[0-9]+") throws -> ManagedObjectModel {
    var shout = AttributeDescription(name: "shout", type: .transformable)
    shout.valueTransformerName = "TFShoutTransformer"
    var code = AttributeDescription(name: "code", type: .string)
    code.regularExpression = pattern
    var missing = AttributeDescription(name: "missing", type: .transformable)
    missing.valueTransformerName = "TFNeverRegistered"
    var oneWay = AttributeDescription(name: "oneWay", type: .transformable)
    oneWay.valueTransformerName = "TFOneWayTransformer"
    return try ManagedObjectModel(entities: [
        EntityDescription(name: "Note", managedObjectClass: TFNote.self, attributes: [
            AttributeDescription(name: "title", type: .string),
            AttributeDescription(name: "tags", type: .transformable),
            shout, code, missing, oneWay,
        ])
    ])
}

func tfStack() throws -> TestStack {
    ValueTransformer.setValueTransformer(TFShoutTransformer(), forName: NSValueTransformerName("TFShoutTransformer"))
    ValueTransformer.setValueTransformer(TFOneWayTransformer(), forName: NSValueTransformerName("TFOneWayTransformer"))
    return try TestStack(model: tfModel())
}

/// A value for a test table, made when the test runs (test arguments are Sendable; `Any` is not).
struct TFValue: Sendable, CustomTestStringConvertible {
    let label: String
    let key: String
    let make: @Sendable () -> Any
    init(_ label: String, key: String = "tags", _ make: @escaping @Sendable () -> Any) { (self.label, self.key, self.make) = (label, key, make) }
    var testDescription: String { label }
}

/// Inserts a note with `values` and saves it; its ID.
@discardableResult
func tfInsert(_ stack: TestStack, _ values: [String: Any]) throws -> ManagedObjectID {
    let ctx = stack.context()
    return try ctx.performAndWait {
        let note = try ctx.insertNewObject(forEntityName: "Note")
        for key in values.keys.sorted() { try note.setValue(values[key], forKey: key) }
        try ctx.save()
        return note.objectID
    }
}

@Suite struct TransformableAttributeTests {
    // §13.1: with no transformer named, the value is archived with NSKeyedArchiver and read back as the Foundation
    // object (an array of strings reads as an NSArray, which casts to [String]); the column holds the archive.
    @Test func aTransformableWithoutATransformerKeepsASecureArchive_13_1() throws {
        let stack = try tfStack()
        let id = try tfInsert(stack, ["tags": ["a", "b"] as [String]])
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.existingObject(with: id)
            let tags = try #require(note.value(forKey: "tags") as? NSArray)
            #expect(tags as? [String] == ["a", "b"])
        }
        let row = try stack.sql("SELECT ZTAGS FROM ZNOTE")
        guard case .blob(let data)? = row.first?.first else { Issue.record("ZTAGS is not a blob: \(row)"); return }
        let archive = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any]
        #expect(archive?["$archiver"] as? String == "NSKeyedArchiver")
    }

    // §13.1: the types the default transformer accepts, each read back equal.
    @Test(arguments: [
        TFValue("string") { "text" }, TFValue("integer") { 42 }, TFValue("double") { 2.5 }, TFValue("Boolean") { true },
        TFValue("date") { Date(timeIntervalSinceReferenceDate: 7) }, TFValue("data") { Data([1, 2, 3]) },
        TFValue("URL") { URL(string: "https://example.com/a")! }, TFValue("UUID") { UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")! },
        TFValue("null in an array") { [NSNull(), "x"] as [Any] }, TFValue("array of strings") { ["x", "y"] }, TFValue("NSArray") { NSArray(array: ["x"]) },
        TFValue("dictionary") { ["k": 1, "l": 2] }, TFValue("set") { Set(["p", "q"]) },
        TFValue("nested") { ["list": [1, 2], "name": "n"] as [String: Any] },
    ])
    func theDefaultTransformerAcceptsFoundationValues_13_1(_ c: TFValue) throws {
        let (label, value) = (c.label, c.make())
        let stack = try tfStack()
        let id = try tfInsert(stack, ["tags": value])
        let ctx = stack.context()
        try ctx.performAndWait {
            let read = try ctx.existingObject(with: id).value(forKey: "tags")
            let equal = ManagedObject.transformedValuesEqual(read, value)
            #expect(equal, "\(label): \(String(describing: read)) read back for \(value)")
        }
    }

    // §13.1: a transformer the app registers by name transforms the value both ways; the store keeps its bytes.
    @Test func aTransformerRegisteredByNameTransformsTheValue_13_1() throws {
        let stack = try tfStack()
        let id = try tfInsert(stack, ["shout": "hello"])
        let ctx = stack.context()
        let read = try ctx.performAndWait { try ctx.existingObject(with: id).value(forKey: "shout") as? String }
        #expect(read == "HELLO")
        #expect(try stack.sql("SELECT ZSHOUT FROM ZNOTE") == [[.blob(Data("OLLEH".utf8))]])
    }

    // §13.1: typed properties of a Transformable read and write the app's type (an NSArray read back casts to [String]).
    @Test func aTypedPropertyReadsTheTransformedValue_13_1() throws {
        let stack = try tfStack()
        let ctx = stack.context()
        let id = try ctx.performAndWait {
            let note = TFNote(context: ctx)
            note.tags = ["x", "y"]
            note.shout = "hey"
            try ctx.save()
            return note.objectID
        }
        let other = stack.context()
        let (tags, shout) = try other.performAndWait {
            let note = try #require(try other.existingObject(with: id) as? TFNote)
            return (note.tags, note.shout)
        }
        #expect(tags == ["x", "y"])
        #expect(shout == "HEY")
    }

    // §13.2: a child context pushes the transformed data to its parent, which saves it; the value reads back.
    @Test func aChildContextPushesTheTransformedValue_13_2() throws {
        let stack = try tfStack()
        let parent = stack.context()
        let child = stack.child(of: parent)
        try child.performAndWait {
            let note = try child.insertNewObject(forEntityName: "Note")
            try note.setValue(["k": ["v"]], forKey: "tags")
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let other = stack.context()
        let tags = try other.performAndWait { try other.fetch(FetchRequest(entityName: "Note")).first?.value(forKey: "tags") }
        #expect(ManagedObject.transformedValuesEqual(tags, ["k": ["v"]]))
    }

    // §13.1: a stored value whose transformer is not registered reads as nil.
    @Test func aValueOfAnUnregisteredTransformerReadsAsNil_13_1() throws {
        let stack = try tfStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.insertNewObject(forEntityName: "Note")
            try note.setPrimitiveValue(.data(Data("stored".utf8)), forKey: "missing")
            try ctx.save()
            #expect(note.value(forKey: "missing") == nil)
            #expect(note.primitiveValue(forKey: "missing") == .data(Data("stored".utf8)))
        }
    }

    // §13.3: a value the transformer cannot transform is refused with a validation error naming entity, object and
    // property; nothing is written.
    @Test(arguments: [
        TFValue("an object without secure coding") { TFPlainObject() }, TFValue("an array holding one") { [TFPlainObject()] },
        TFValue("a Decimal") { Decimal(1.5) }, TFValue("a value the custom transformer refuses", key: "shout") { 12 },
        TFValue("a transformer that is not registered", key: "missing") { "x" },
        TFValue("a transformer that allows no reverse transformation", key: "oneWay") { "x" },
    ])
    func aValueTheTransformerRefusesIsAValidationError_13_3(_ c: TFValue) throws {
        let (label, key, value) = (c.label, c.key, c.make())
        let stack = try tfStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.insertNewObject(forEntityName: "Note")
            let error = try #require(throws: ObjectGraphError.self) { try note.setValue(value, forKey: key) }
            #expect(error.code == .validation, "\(label)")
            #expect(error.entityName == "Note" && error.propertyName == key && error.objectID == note.objectID, "\(label)")
            try ctx.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZNOTE WHERE Z\(key.uppercased()) IS NOT NULL") == [[.integer(0)]])
    }

    // §13.3: a refused value leaves the object's value as it was.
    @Test func aRefusedValueLeavesTheEarlierOne_13_3() throws {
        let stack = try tfStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.insertNewObject(forEntityName: "Note")
            try note.setValue(["kept"], forKey: "tags")
            #expect(throws: ObjectGraphError.self) { try note.setValue([TFPlainObject()], forKey: "tags") }
            #expect(note.value(forKey: "tags") as? [String] == ["kept"])
        }
    }

    // §13.2: setting a value equal to the committed one is no change, even when its archive's bytes differ.
    @Test func settingAnEqualValueBackIsNoChange_13_2() throws {
        let stack = try tfStack()
        let id = try tfInsert(stack, ["tags": ["b": 2, "a": 1, "c": 3]])
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.existingObject(with: id)
            var rebuilt: [String: Int] = [:]
            for (key, value) in [("c", 3), ("a", 1), ("b", 2)] { rebuilt[key] = value }
            try note.setValue(rebuilt, forKey: "tags")
            #expect(note.changedValues().isEmpty)
            try note.setValue(["a": 9], forKey: "tags")
            #expect(note.changedValues().keys.sorted() == ["tags"])
            #expect(ManagedObject.transformedValuesEqual(note.changedValues()["tags"], ["a": 9]))
            #expect(ManagedObject.transformedValuesEqual(note.committedValues(forKeys: ["tags"])["tags"], ["a": 1, "b": 2, "c": 3]))
        }
    }

    // §13.4: a predicate compares a Transformable with nil only.
    @Test func aPredicateComparesATransformableWithNilOnly_13_4() throws {
        let stack = try tfStack()
        try tfInsert(stack, ["tags": ["a"]])
        try tfInsert(stack, ["title": "none"])
        let ctx = stack.context()
        try ctx.performAndWait {
            let withTags = try ctx.fetch(FetchRequest(entityName: "Note", predicate: ObjectPredicate(format: "tags != nil")))
            #expect(withTags.count == 1)
            let error = try #require(throws: ObjectGraphError.self) {
                try ctx.fetch(FetchRequest(entityName: "Note", predicate: ObjectPredicate(format: "tags == %@", Data([1]))))
            }
            #expect(error.code == .invalidFetchRequest)
            #expect(error.message.contains("§13.4"))
        }
    }

    // §13.1: a model names a Transformable's transformer and class; ObjectGraph reads both from the model file.
    @Test func theModelFileNamesTheTransformer_13_1() throws {
        var attribute = ModelFile.Attribute(name: "tags", type: .transformable)
        attribute.valueTransformerName = "TFShoutTransformer"
        attribute.customClassName = "[String]"
        attribute.allowsExternalBinaryDataStorage = true
        let model = try ManagedObjectModel(file: ModelFile(entities: [ModelFile.Entity(name: "Note", attributes: [attribute])]))
        let read = try #require(model.entitiesByName["Note"]?.attributes.first)
        #expect(read.valueTransformerName == "TFShoutTransformer")
        #expect(read.customClassName == "[String]")
        #expect(read.allowsExternalBinaryDataStorage)
    }

    // §13.1, §13.5, §13.7: an option on a type that does not take it, or a pattern that is not a regular expression,
    // fails loading the model, naming the entity and attribute.
    @Test func anOptionTheTypeDoesNotTakeFailsTheModel_13_1() throws {
        var transformer = AttributeDescription(name: "title", type: .string)
        transformer.valueTransformerName = "TFShoutTransformer"
        var external = AttributeDescription(name: "title", type: .string)
        external.allowsExternalBinaryDataStorage = true
        var pattern = AttributeDescription(name: "title", type: .integer64)
        pattern.regularExpression = "[0-9]+"
        var broken = AttributeDescription(name: "title", type: .string)
        broken.regularExpression = "(unclosed"
        for attribute in [transformer, external, pattern, broken] {
            let error = try #require(throws: ModelError.self) {
                try ManagedObjectModel(entities: [EntityDescription(name: "Note", attributes: [attribute])])
            }
            #expect(error.entity == "Note" && error.property == "title")
        }
    }
}

@Suite struct StringPatternTests {
    // §13.7: a string that does not match its attribute's pattern whole fails the save with 1680, naming entity,
    // object and property; a match of a prefix only is no match.
    @Test(arguments: [("AB12", true), ("ab12", false), ("AB12x", false), ("xAB12", false), ("AB", false)])
    func aStringMustMatchItsPatternWhole_13_7(_ value: String, _ valid: Bool) throws {
        let stack = try tfStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let note = try ctx.insertNewObject(forEntityName: "Note")
            try note.setValue(value, forKey: "code")
            if valid {
                try ctx.save()
                return
            }
            let error = try #require(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error.code == .stringPatternMatching)
            #expect(error.entityName == "Note" && error.propertyName == "code" && error.objectID == note.objectID)
        }
    }

    // §13.7: nil is not checked against the pattern (optionality is a rule of its own).
    @Test func nilIsNotCheckedAgainstThePattern_13_7() throws {
        let stack = try tfStack()
        try tfInsert(stack, ["title": "no code"])
        #expect(try stack.sql("SELECT COUNT(*) FROM ZNOTE") == [[.integer(1)]])
    }
}
