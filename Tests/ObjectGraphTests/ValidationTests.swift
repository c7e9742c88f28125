import Foundation
import Testing
@testable import ObjectGraph

// Validation (semantics §2.1 step 3; issue "ObjectGraph core" items 2 and 5, "Bad input"): Core Data's codes,
// the multiple-errors code 1560, errors naming entity, object and property, nothing written on failure.
// Helpers are prefixed `vd`.

/// A record with one property per kind of constraint, plus a to-many with count limits.
final class VDRecord: ManagedObject {
    @Managed("required") var required: String?
    @Managed("count") var count: Int32
    @Managed("code") var code: String?
    @Managed("when") var when: Date?
    @Managed("parts") var parts: Set<VDPart>
    var validateForInsertCalls = 0
    var validateForUpdateCalls = 0
    var validateForDeleteCalls = 0

    override func validateForInsert() throws {
        validateForInsertCalls += 1
        try super.validateForInsert()
    }

    override func validateForUpdate() throws {
        validateForUpdateCalls += 1
        // A `validate<Key>`-style rule written by the app: "code" may not be "locked".
        if code == "locked" {
            throw ObjectGraphError(.validation, "code may not be 'locked'", entity: entity.name, objectID: objectID, property: "code")
        }
        try super.validateForUpdate()
    }

    override func validateForDelete() throws {
        validateForDeleteCalls += 1
        if code == "keep" {
            throw ObjectGraphError(.validation, "this record is kept", entity: entity.name, objectID: objectID)
        }
        try super.validateForDelete()
    }
}

final class VDPart: ManagedObject {
    @Managed("record") var record: VDRecord?
}

let vdEarliest = Date(timeIntervalSinceReferenceDate: 0)
let vdLatest = Date(timeIntervalSinceReferenceDate: 1_000_000)

func vdModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Record", managedObjectClass: VDRecord.self,
            attributes: [
                AttributeDescription(name: "required", type: .string, isOptional: false),
                AttributeDescription(name: "count", type: .integer32, isOptional: false, defaultValue: .integer(5), minValue: 0, maxValue: 10),
                AttributeDescription(name: "code", type: .string, minLength: 2, maxLength: 5),
                AttributeDescription(name: "when", type: .date, minValue: vdEarliest.timeIntervalSinceReferenceDate, maxValue: vdLatest.timeIntervalSinceReferenceDate),
            ],
            relationships: [RelationshipDescription(name: "parts", destination: "Part", inverse: "record", toMany: true, minCount: 2, maxCount: 3)]),
        EntityDescription(
            name: "Part", managedObjectClass: VDPart.self,
            relationships: [RelationshipDescription(name: "record", destination: "Record", inverse: "parts")]),
    ])
}

/// Fills a record with valid values (two parts).
func vdValid(_ ctx: ManagedObjectContext) -> VDRecord {
    let r = VDRecord(context: ctx)
    r.required = "yes"
    r.count = 5
    r.code = "abc"
    r.when = Date(timeIntervalSinceReferenceDate: 500)
    r.parts = [VDPart(context: ctx), VDPart(context: ctx)]
    return r
}

/// One broken property and the code it must give.
struct VDCase: Sendable, CustomTestStringConvertible {
    let label: String
    let code: ObjectGraphError.Code
    let property: String
    let breakIt: @Sendable (VDRecord, ManagedObjectContext) -> Void
    var testDescription: String { "\(label) → \(code.rawValue)" }
}

@Suite struct ValidationTests {

    static let cases: [VDCase] = [
        VDCase(label: "missing mandatory", code: .missingMandatoryProperty, property: "required") { r, _ in r.required = nil },
        VDCase(label: "number too small", code: .numberTooSmall, property: "count") { r, _ in r.count = -1 },
        VDCase(label: "number too large", code: .numberTooLarge, property: "count") { r, _ in r.count = 11 },
        VDCase(label: "string too short", code: .stringTooShort, property: "code") { r, _ in r.code = "a" },
        VDCase(label: "string too long", code: .stringTooLong, property: "code") { r, _ in r.code = "abcdef" },
        VDCase(label: "date too soon", code: .dateTooSoon, property: "when") { r, _ in r.when = vdEarliest.addingTimeInterval(-1) },
        VDCase(label: "date too late", code: .dateTooLate, property: "when") { r, _ in r.when = vdLatest.addingTimeInterval(1) },
        VDCase(label: "to-many below minimum", code: .relationshipLacksMinimumCount, property: "parts") { r, _ in
            r.parts = Set(r.parts.prefix(1))
        },
        VDCase(label: "to-many above maximum", code: .relationshipExceedsMaximumCount, property: "parts") { r, ctx in
            r.parts = r.parts.union([VDPart(context: ctx), VDPart(context: ctx)])
        },
    ]

    // Semantics §2.1 step 3: each property constraint fails the save with Core Data's code, naming the entity,
    // the object and the property; nothing is written; the context keeps its changes; fixing it lets the save
    // through.
    @Test(arguments: cases)
    func eachConstraintHasItsCode_2_1(_ c: VDCase) throws {
        let stack = try TestStack(model: vdModel())
        let ctx = stack.context()
        let writes = ctxWrites(stack.coordinator)
        try ctx.performAndWait {
            let r = vdValid(ctx)
            c.breakIt(r, ctx)
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error?.code == c.code)
            #expect(error?.entityName == "Record")
            #expect(error?.propertyName == c.property)
            #expect(error?.objectID == r.objectID)
            #expect(error.map { String(describing: $0).contains(c.property) } == true)
            #expect(r.isInserted)
            #expect(r.objectID.isTemporaryID)
            #expect(ctx.hasChanges)
            // Fix it: valid values, exactly two parts, parts left without a record deleted.
            r.required = "yes"
            r.count = 5
            r.code = "abc"
            r.when = Date(timeIntervalSinceReferenceDate: 500)
            let keep = Array(r.parts.prefix(2))
            r.parts = Set(keep + (keep.count < 2 ? [VDPart(context: ctx)] : []))
            for case let part as VDPart in ctx.insertedObjects where part.record == nil { ctx.delete(part) }
            try ctx.save()
        }
        #expect(ctxWrites(stack.coordinator) > writes)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZRECORD") == [[.integer(1)]])
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPART") == [[.integer(2)]])
    }

    // Semantics §2.1 step 3: several failures, on one object and on two, become one 1560 error whose details
    // each name their object and property; the store sees no statement at all.
    @Test func severalFailuresGive1560_2_1() throws {
        let stack = try TestStack(model: vdModel())
        let ctx = stack.context()
        let statements = stack.coordinator.counters.statements
        ctx.performAndWait {
            let first = vdValid(ctx)
            first.required = nil
            first.count = 99
            let second = vdValid(ctx)
            second.code = "toolongcode"
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error?.code == .multipleErrors)
            #expect(error?.code.rawValue == 1560)
            let details = error?.detailedErrors ?? []
            #expect(details.count == 3)
            let described = Set(details.map { "\($0.objectID == first.objectID ? "first" : "second").\($0.propertyName ?? "?"):\($0.code.rawValue)" })
            #expect(described == ["first.required:1570", "first.count:1610", "second.code:1660"])
            #expect(details.allSatisfy { $0.entityName == "Record" })
            #expect(ctx.insertedObjects.count == 6)
        }
        #expect(stack.coordinator.counters.statements == statements)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZRECORD") == [[.integer(0)]])
    }

    // Semantics §2.1 step 3, house rule (the same input fails the same way on every run): a 1560 error lists its
    // details by object in key order (inserted objects: the order they were inserted in), then by property and
    // code, whatever order the context walked its objects in (their sets', or their addresses' in a large save).
    @Test func multipleErrorsAreListedInKeyOrder_2_1() throws {
        let stack = try TestStack(model: vdModel())
        let ctx = stack.context()
        ctx.performAndWait {
            let records = (0..<12).map { _ in vdValid(ctx) }
            for (i, r) in records.enumerated() {
                if i % 2 == 0 { r.count = 99 } else { r.code = "toolongcode" }
                if i % 3 == 0 { r.required = nil }
            }
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            let details = error?.detailedErrors ?? []
            #expect(details.count == 12 + 4)
            let order = details.map { d in records.firstIndex { $0.objectID == d.objectID } ?? -1 }
            #expect(order == order.sorted(), "details follow the objects' insert order: \(order)")
            // Within one object: by property name.
            let first = details.filter { $0.objectID == records[0].objectID }.map { $0.propertyName ?? "" }
            #expect(first == ["count", "required"])
        }
    }

    // Semantics §2.1 step 3 and "Bad input" (nothing already saved is lost or changed): a failing update leaves the
    // stored row and its version alone; validateForUpdate overrides run (an app rule), validateForInsert runs for
    // inserts only.
    @Test func failedUpdateChangesNothingStored_2_1() throws {
        let stack = try TestStack(model: vdModel())
        let ctx = stack.context()
        let record = try ctx.performAndWait {
            let r = vdValid(ctx)
            try ctx.save()
            #expect(r.validateForInsertCalls == 1)
            #expect(r.validateForUpdateCalls == 0)
            return r
        }
        let rowBefore = try stack.sql("SELECT Z_OPT, ZCODE, ZCOUNT FROM ZRECORD")
        ctx.performAndWait {
            record.code = "locked"
            record.count = 7
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error?.code == .validation)
            #expect(error?.propertyName == "code")
            #expect(record.validateForUpdateCalls == 1)
            #expect(record.isUpdated)
            #expect(record.committedValues(forKeys: ["code"])["code"] as? String == "abc")
        }
        #expect(try stack.sql("SELECT Z_OPT, ZCODE, ZCOUNT FROM ZRECORD") == rowBefore)
        try ctx.performAndWait {
            record.code = "ok"
            try ctx.save()
        }
        #expect(try stack.sql("SELECT Z_OPT, ZCODE, ZCOUNT FROM ZRECORD") == [[.integer(2), .text("ok"), .integer(7)]])
    }

    // Semantics §2.1 steps 1 and 3: validateForDelete runs for deleted objects (an app override can refuse the
    // delete); the delete is not written.
    @Test func validateForDeleteCanRefuse_2_1() throws {
        let stack = try TestStack(model: vdModel())
        let ctx = stack.context()
        let record = try ctx.performAndWait {
            let r = vdValid(ctx)
            r.code = "keep"
            try ctx.save()
            return r
        }
        ctx.performAndWait {
            ctx.delete(record)
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error?.code == .validation)
            #expect(record.validateForDeleteCalls == 1)
            #expect(record.isDeleted)
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZRECORD") == [[.integer(1)]])
    }

    // "Bad input" (a wrong-type value set through key-value access): setValue(_:forKey:) with a
    // value of the wrong type, or an unknown key, throws 1550 naming entity, object and property, and the value
    // is unchanged.
    @Test func wrongTypeThroughKeyValueAccessThrows() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(try ctx.existingObject(with: ids[0]) as? Item)
            let wrongType = #expect(throws: ObjectGraphError.self) { try item.setValue("cheap", forKey: "price") }
            #expect(wrongType?.code == .validation)
            #expect(wrongType?.code.rawValue == 1550)
            #expect(wrongType?.entityName == "Item")
            #expect(wrongType?.propertyName == "price")
            #expect(wrongType?.objectID == ids[0])
            #expect(item.price == 10)
            let wrongRelationship = #expect(throws: ObjectGraphError.self) { try item.setValue("a tag", forKey: "tag") }
            #expect(wrongRelationship?.propertyName == "tag")
            let unknown = #expect(throws: ObjectGraphError.self) { try item.setValue(1, forKey: "colour") }
            #expect(unknown?.propertyName == "colour")
            #expect(!item.hasChanges)
            #expect(!ctx.hasChanges)
            // The right type goes through key-value access and is tracked.
            try item.setValue(25.5, forKey: "price")
            #expect(item.value(forKey: "price") as? Double == 25.5)
            #expect(item.changedValues()["price"] as? Double == 25.5)
        }
    }
}
