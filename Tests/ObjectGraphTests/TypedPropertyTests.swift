import Foundation
import Testing
@testable import ObjectGraph

/// Typed access (semantics §1.5, §4): `@Managed` properties and the typed read and fetch agree with key-value
/// access, fire faults as a read does, and convert as the property's type says.
@Suite struct TypedPropertyTests {
    // Semantics §1.5 (typed properties read and write what key-value access does): optionals set to nil and back,
    // integers, booleans, dates and to-ones through @Managed agree with value(forKey:) and track changes.
    @Test func typedPropertiesAgreeWithKeyValueAccess_1_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            let item = Item(context: ctx)
            item.id = 7
            item.name = "seven"
            item.price = 2.5
            item.flag = true
            item.added = Date(timeIntervalSinceReferenceDate: 42)
            item.tag = tag
            try ctx.save()
            #expect(item.value(forKey: "id") as? Int64 == 7)
            #expect(item.value(forKey: "flag") as? Bool == true)
            item.name = nil
            item.added = nil
            item.tag = nil
            #expect(item.name == nil && item.added == nil && item.tag == nil)
            #expect(Set(item.changedValues().keys) == ["name", "added", "tag"])
            #expect(tag.items.isEmpty)
            item.name = "seven"
            #expect(Set(item.changedValues().keys) == ["added", "tag"])
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let item = try #require(try check.fetch(FetchRequest(entityName: "Item")).first as? Item)
            #expect(item.id == 7 && item.name == "seven" && item.price == 2.5 && item.flag && item.added == nil && item.tag == nil)
        }
    }

    // Semantics §4: the typed read is `value(forKey:)` without boxing: it fires the fault as a read does, and
    // converts as a `@Managed` property of that type would.
    @Test func typedReadFiresTheFaultAndConverts_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(ctx.object(with: ids[2]) as? Item)
            #expect(item.isFault)
            let before = ctx.counters.faultsFired
            #expect(item.value(forKey: "id", as: Int64.self) == 3)
            #expect(!item.isFault)
            #expect(ctx.counters.faultsFired == before + 1)
            #expect(item.value(forKey: "id", as: Int.self) == 3)
            #expect(item.value(forKey: "name", as: String?.self) == "item 3")
            #expect(item.value(forKey: "name", as: String.self) == "item 3")
            #expect(item.value(forKey: "price", as: Double.self) == 30)
            #expect(item.value(forKey: "added", as: Date?.self) == nil)
            #expect(item.value(forKey: "tag", as: Tag?.self) == nil)
            // Every form agrees with the boxed read.
            #expect(item.value(forKey: "id", as: Int64.self) == item.value(forKey: "id") as? Int64)
        }
    }

    @Test func storedFormOfATypedValueMatchesTheBoxedOne() {
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        #expect(PropertyValue(attribute: Int64(7)) == PropertyValue(any: Int64(7).attributeValue))
        #expect(PropertyValue(attribute: 7) == .integer(7))
        #expect(PropertyValue(attribute: "seven") == .string("seven"))
        #expect(PropertyValue(attribute: Optional("seven")) == .string("seven"))
        #expect(PropertyValue(attribute: String?.none) == .null)
        #expect(PropertyValue(attribute: 7.5) == .double(7.5))
        #expect(PropertyValue(attribute: date) == .date(date))
        #expect(PropertyValue(attribute: true) == .bool(true))
        #expect(PropertyValue(attribute: Int32(7)) == PropertyValue(any: Int32(7).attributeValue))  // the boxed way
    }

    // Semantics §4: a typed fetch returns the objects of the requested class, in the fetch's order; objects of
    // another class are left out (the loop that replaced `compactMap` keeps both paths: the exact class and a
    // cast to a superclass).
    @Test func typedFetchKeepsOrderAndCasts_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id", ascending: false)])
            let items = try ctx.fetch(request, as: Item.self)
            #expect(items.map(\.id) == [5, 4, 3, 2, 1])
            let plain = try ctx.fetch(request, as: ManagedObject.self)
            #expect(plain.count == 5)
            #expect(zip(plain, items).allSatisfy { $0 === $1 })
            #expect(try ctx.fetch(request, as: Tag.self).isEmpty)
        }
    }
}
