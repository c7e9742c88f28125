import Foundation
import Testing
@testable import ObjectGraph

// The model (issue "ObjectGraph core" item 2; semantics §0, §1.1 "snapshots hold every attribute"): every
// attribute type round-trips, models decode from a file, malformed models name the entity and property, and
// the version hash follows the store's shape. Helpers are prefixed `md`.

/// One entity with an attribute of every type Core Data offers.
func mdAllTypesModel(extra: [AttributeDescription] = []) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(name: "Sample", attributes: [
            AttributeDescription(name: "i16", type: .integer16),
            AttributeDescription(name: "i32", type: .integer32),
            AttributeDescription(name: "i64", type: .integer64),
            AttributeDescription(name: "dbl", type: .double),
            AttributeDescription(name: "flt", type: .float),
            AttributeDescription(name: "dec", type: .decimal),
            AttributeDescription(name: "str", type: .string),
            AttributeDescription(name: "bool", type: .boolean),
            AttributeDescription(name: "date", type: .date),
            AttributeDescription(name: "blob", type: .binaryData),
            AttributeDescription(name: "uuid", type: .uuid),
            AttributeDescription(name: "uri", type: .uri),
        ] + extra),
    ])
}

@Suite struct ModelTests {

    // Semantics §0 / §1.1 (a row holds every attribute): each of the twelve attribute types is stored and read
    // back with its Swift type, in the SQLite and the in-memory store, through a fresh coordinator for SQLite.
    @Test(arguments: [PersistentStoreType.sqlite, .inMemory])
    func everyAttributeTypeRoundTrips_0(_ type: PersistentStoreType) throws {
        let stack = try TestStack(model: mdAllTypesModel(), type: type)
        let uuid = UUID()
        let date = Date(timeIntervalSinceReferenceDate: 750_000_000.25)
        let url = URL(string: "https://example.com/a?b=c")!
        let decimal = Decimal(string: "12345.6789")!
        let blob = Data([0, 1, 2, 254, 255])
        let writer = stack.context()
        let id = try writer.performAndWait {
            let o = try writer.insertNewObject(forEntityName: "Sample")
            try o.setValue(Int16(-12_345), forKey: "i16")
            try o.setValue(Int32(2_000_000_000), forKey: "i32")
            try o.setValue(Int64(9_000_000_000_000), forKey: "i64")
            try o.setValue(3.25, forKey: "dbl")
            try o.setValue(Float(1.5), forKey: "flt")
            try o.setValue(decimal, forKey: "dec")
            try o.setValue("héllo", forKey: "str")
            try o.setValue(true, forKey: "bool")
            try o.setValue(date, forKey: "date")
            try o.setValue(blob, forKey: "blob")
            try o.setValue(uuid, forKey: "uuid")
            try o.setValue(url, forKey: "uri")
            try writer.save()
            return o.objectID
        }
        let reader = type == .sqlite ? stack.context(try stack.secondCoordinator()) : stack.context()
        try reader.performAndWait {
            let o = try reader.existingObject(with: id)
            #expect(o.value(forKey: "i16") as? Int16 == -12_345)
            #expect(o.value(forKey: "i32") as? Int32 == 2_000_000_000)
            #expect(o.value(forKey: "i64") as? Int64 == 9_000_000_000_000)
            #expect(o.value(forKey: "dbl") as? Double == 3.25)
            #expect(o.value(forKey: "flt") as? Float == 1.5)
            #expect(o.value(forKey: "dec") as? Decimal == decimal)
            #expect(o.value(forKey: "str") as? String == "héllo")
            #expect(o.value(forKey: "bool") as? Bool == true)
            #expect(o.value(forKey: "date") as? Date == date)
            #expect(o.value(forKey: "blob") as? Data == blob)
            #expect(o.value(forKey: "uuid") as? UUID == uuid)
            #expect(o.value(forKey: "uri") as? URL == url)
        }
    }

    // A model decoded from a file: a JSON model file gives the same entities, options and
    // version hash as the same model built in Swift.
    @Test func modelFileDecodesToTheSameModel_0() throws {
        let json = """
            {"entities": [
              {"name": "Item",
               "attributes": [
                 {"name": "id", "type": "integer64", "optional": false, "defaultValue": 0},
                 {"name": "name", "type": "string", "maxLength": 40},
                 {"name": "price", "type": "double", "optional": false, "defaultValue": 0, "minValue": 0},
                 {"name": "added", "type": "date"},
                 {"name": "flag", "type": "boolean", "defaultValue": false},
                 {"name": "scratch", "type": "string", "transient": true}],
               "relationships": [
                 {"name": "tag", "destination": "Tag", "inverse": "items"},
                 {"name": "labels", "destination": "Label", "inverse": "items", "toMany": true}],
               "uniquenessConstraints": [["id"]]},
              {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "inverse": "tag", "toMany": true, "deleteRule": "cascade"}]},
              {"name": "Label", "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "inverse": "labels", "toMany": true}]}
            ]}
            """
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("og-model-\(UUID().uuidString).json")
        try Data(json.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let decoded = try ManagedObjectModel(contentsOf: url, classes: ["Item": Item.self, "Tag": Tag.self, "Label": Label.self])
        let built = try makeModel(tagItemsDeleteRule: .cascade)
        #expect(decoded.versionHash == built.versionHash)
        let item = try #require(decoded.entity(named: "Item"))
        #expect(item.managedObjectClass == Item.self)
        #expect(item.uniquenessConstraints == [["id"]])
        #expect(item.attribute(named: "id")?.isOptional == false)
        #expect(item.attribute(named: "id")?.defaultValue == .integer(0))
        #expect(item.attribute(named: "name")?.maxLength == 40)
        #expect(item.attribute(named: "price")?.minValue == 0)
        #expect(item.attribute(named: "scratch")?.isTransient == true)
        #expect(item.relationship(named: "labels")?.isToMany == true)
        #expect(decoded.entity(named: "Tag")?.relationship(named: "items")?.deleteRule == .cascade)
        // The decoded model runs a store.
        let stack = try TestStack(model: decoded)
        let ids = try stack.seed(2)
        #expect(ids.count == 2)
    }

    /// A malformed model and the entity/property its error must name.
    struct Malformed: Sendable, CustomTestStringConvertible {
        let label: String
        let entity: String
        let property: String?
        let build: @Sendable () throws -> ManagedObjectModel
        var testDescription: String { label }
    }

    static let malformed: [Malformed] = [
        Malformed(label: "missing inverse", entity: "A", property: "b") {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "a")]),
                EntityDescription(name: "B"),
            ])
        },
        Malformed(label: "unknown destination", entity: "A", property: "b") {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "Nowhere", inverse: "a")]),
            ])
        },
        Malformed(label: "inverse points elsewhere", entity: "A", property: "b") {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", relationships: [
                    RelationshipDescription(name: "b", destination: "B", inverse: "a"),
                    RelationshipDescription(name: "other", destination: "B", inverse: "a2"),
                ]),
                EntityDescription(name: "B", relationships: [
                    RelationshipDescription(name: "a", destination: "A", inverse: "other"),
                    RelationshipDescription(name: "a2", destination: "A", inverse: "other"),
                ]),
            ])
        },
        Malformed(label: "duplicate property (case-insensitive, as columns)", entity: "A", property: "NAME") {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", attributes: [
                    AttributeDescription(name: "name", type: .string), AttributeDescription(name: "NAME", type: .string),
                ]),
            ])
        },
        Malformed(label: "reserved property name", entity: "A", property: "objectID") {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", attributes: [AttributeDescription(name: "objectID", type: .string)]),
            ])
        },
        Malformed(label: "default of the wrong type in a file", entity: "A", property: "count") {
            try ManagedObjectModel(jsonData: Data("""
                {"entities": [{"name": "A", "attributes": [{"name": "count", "type": "integer32", "defaultValue": "many"}]}]}
                """.utf8))
        },
        Malformed(label: "bad entity name", entity: "1A", property: nil) {
            try ManagedObjectModel(entities: [EntityDescription(name: "1A")])
        },
    ]

    // "Bad input": a malformed model is a clear error naming the entity and the property.
    @Test(arguments: malformed)
    func malformedModelNamesEntityAndProperty_0(_ c: Malformed) {
        let error = #expect(throws: ModelError.self) { _ = try c.build() }
        #expect(error?.entity == c.entity)
        #expect(error?.property == c.property)
        if let error {
            #expect(String(describing: error).contains(c.entity))
            if let property = c.property { #expect(String(describing: error).contains(property)) }
        }
    }

    // A store refuses another model: the version hash is the same for the same shape,
    // changes with anything that shapes the tables (attribute, type, relationship, constraint), and ignores
    // what does not (transient attributes, validation limits, defaults).
    @Test func versionHashFollowsTheStoreShape_0() throws {
        let base = try mdAllTypesModel().versionHash
        #expect(try mdAllTypesModel().versionHash == base)
        #expect(try mdAllTypesModel(extra: [AttributeDescription(name: "more", type: .string)]).versionHash != base)
        #expect(try mdAllTypesModel(extra: [AttributeDescription(name: "more", type: .integer64)]).versionHash
                != mdAllTypesModel(extra: [AttributeDescription(name: "more", type: .string)]).versionHash)
        #expect(try mdAllTypesModel(extra: [AttributeDescription(name: "tmp", type: .string, isTransient: true)]).versionHash == base)
        let plain = try makeModel().versionHash
        #expect(try makeModel(tagItemsDeleteRule: .cascade).versionHash == plain)  // delete rules do not shape tables
        let unconstrained = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [AttributeDescription(name: "k", type: .string)]),
        ]).versionHash
        let constrained = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [AttributeDescription(name: "k", type: .string)], uniquenessConstraints: [["k"]]),
        ]).versionHash
        #expect(unconstrained != constrained)
        #expect(try mdAllTypesModel().isConfiguration(compatibleWithVersionHash: base))
    }

    // A property is found by its name as `==` compares strings: the comparison of representations that comes
    // first only finds a key sooner. Keys built at run time (a long name, not a literal), and a name written with
    // another Unicode form (decomposed é), find the same property; an unknown key finds none.
    @Test func propertiesAreFoundByEqualNamesWhateverTheirRepresentation() throws {
        let long = "aVeryLongAttributeNameBeyondSmallStrings"
        let entity = EntityDescription(
            name: "Thing", managedObjectClass: ManagedObject.self,
            attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "caf\u{E9}", type: .string),
                AttributeDescription(name: long, type: .string),
            ])
        _ = try ManagedObjectModel(entities: [entity])
        let built = ["aVeryLong", "AttributeName", "BeyondSmallStrings"].joined()
        #expect(entity.propertyRef(built) == entity.propertyRef(long))
        #expect(entity.propertyRef(built) != nil)
        #expect(entity.propertyRef("cafe\u{301}") == entity.propertyRef("caf\u{E9}"))
        #expect(entity.propertyRef("cafe\u{301}") != nil)
        #expect(entity.propertyRef(String("xid".dropFirst())) == entity.propertyRef("id"))
        #expect(entity.propertyRef("cafe") == nil)
        #expect(entity.propertyRef("Id") == nil)
    }
}
