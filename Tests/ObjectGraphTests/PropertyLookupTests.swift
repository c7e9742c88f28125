import Foundation
import Testing
@testable import ObjectGraph

/// Property lookup by name (Benchmarks/README.md, fifth round): a name is matched word for word first, then as a
/// string, so every key that equals a property name finds it, however the key is represented.
@Suite struct PropertyLookupTests {
    private func entity() throws -> EntityDescription {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Thing", managedObjectClass: ManagedObject.self,
                attributes: [
                    AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                    AttributeDescription(name: "aVeryLongPropertyNameIndeed", type: .string),
                    AttributeDescription(name: "caf\u{E9}", type: .string),
                ])
        ])
        return try #require(model.entity(named: "Thing"))
    }

    // Semantics §1.1 (properties are named by strings, key-value coding): a key made at run time (not sharing the
    // name's storage), a long name, a name spelled with a combining accent (equal as a Swift string) and an unknown
    // key all answer as `==` on the names would.
    @Test func everyRepresentationOfANameFindsIt_1_1() throws {
        let entity = try entity()
        guard case .attribute(let id)? = entity.propertyRef("id") else { Issue.record("id not found"); return }
        let built = String(["i", "d"])
        #expect(entity.propertyRef(built) == .attribute(slot: id))
        let long = "aVeryLongPropertyName" + ["I", "n", "d", "e", "e", "d"].joined()
        guard case .attribute(let longSlot)? = entity.propertyRef("aVeryLongPropertyNameIndeed") else {
            Issue.record("long name not found"); return
        }
        #expect(entity.propertyRef(long) == .attribute(slot: longSlot))
        #expect(entity.propertyRef("cafe\u{301}") != nil)  // "café" with a combining accent
        #expect(entity.propertyRef("cafe\u{301}") == entity.propertyRef("caf\u{E9}"))
        #expect(entity.propertyRef("nope") == nil)
        #expect(entity.propertyRef("") == nil)
    }
}
