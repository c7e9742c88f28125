import Foundation
import Testing
@testable import ObjectGraph

/// Docs/coredata-behaviour.md §4 (fetches include pending changes): a fetch laid over a context's unsaved objects
/// tests each of them against its predicate; `key IN {list}` is answered there by a hashed lookup, which must give
/// the evaluator's answer for every value, or leave the value to the evaluator.
@Suite struct InListMembershipTests {
    struct Subject: PredicateSubject {
        var value: PropertyValue
        func resolve(keyPath: [Substring]) throws -> KeyPathValue { .single(value) }
        var selfValue: PropertyValue { value }
    }

    static let values: [PropertyValue] = [
        .string("apple"), .string("Apple"), .string("éclair"), .string(""), .integer(1), .integer(2), .integer(-7),
        .integer(1 << 60), .integer((1 << 60) + 1), .double(1), .double(2.5), .bool(true), .null,
    ]

    @Test("An IN list answered by lookup gives the evaluator's answer for every value (§4)", arguments: [
        [PropertyValue.string("apple"), .string("éclair")],
        [.integer(1), .integer(-7), .integer(40)],
        [.integer(1 << 60)],
        [.integer(1), .string("apple")],
    ])
    func lookupAgreesWithTheEvaluator(list: [PropertyValue]) throws {
        let predicate = ObjectPredicate.in("key", stored: list)
        let membership = InListMembership(predicate)
        // Lists of one kind below 2^53 take the lookup; others are left to the evaluator.
        let exact = list.allSatisfy { if case .string = $0 { true } else { false } }
            || list.allSatisfy { if case .integer(let i) = $0 { i.magnitude < 1 << 53 } else { false } }
        #expect((membership != nil) == exact)
        for value in Self.values {
            let subject = Subject(value: value)
            let evaluated = try predicate.evaluate(subject: subject)
            #expect(try (membership?.matches(subject) ?? evaluated) == evaluated, "\(value) IN \(list)")
        }
    }

    // Semantics §4 (fetch by object IDs): a `SELF IN` list whose primary keys form runs is sent to SQLite as
    // ranges plus the leftover IDs; the fetch returns exactly the listed objects, not their neighbours.
    @Test func objectIDListWithRunsFetchesExactlyThose_4() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...40 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
            let all = try ctx.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            let wanted = all.filter { (3...12).contains($0.id) || (20...25).contains($0.id) || [15, 17, 30, 38].contains($0.id) }
            let request = FetchRequest(entityName: "Item", predicate: ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(wanted.map { .objectID($0.objectID) })))),
                                       sortDescriptors: [ObjectSortDescriptor("id")])
            let found = try ctx.fetch(request).compactMap { $0 as? Item }
            #expect(found.map(\.id) == wanted.map(\.id))
            var narrowed = request
            narrowed.predicate = .and([.compare("id", .greaterThan, 10), request.predicate!])
            #expect(try ctx.fetch(narrowed).compactMap { ($0 as? Item)?.id } == [11, 12, 15, 17, 20, 21, 22, 23, 24, 25, 30, 38])
        }
    }

    // Semantics §4: an `IN` list fetches the matching rows whatever its length; its placeholders are written in
    // one buffer (one for one value, none dangling).
    @Test func inListsOfAnyLengthFetchTheirRows_4() throws {
        #expect(SQLiteQueryBuilder.placeholders(1) == "?")
        #expect(SQLiteQueryBuilder.placeholders(2) == "?, ?")
        #expect(SQLiteQueryBuilder.placeholders(500) == Array(repeating: "?", count: 500).joined(separator: ", "))
        let stack = try TestStack()
        try stack.seed(600)
        let ctx = stack.context()
        try ctx.performAndWait {
            for ids in [[7], [3, 9], Array(1...500).map { $0 * 3 % 601 }] {
                let found = try fetchItems(ctx, .in("id", ids.map { Int64($0) })).map(\.id)
                #expect(found == ids.filter { $0 <= 600 }.sorted().map { Int64($0) })
            }
        }
    }

    // Semantics §4: an `IN` list binds its values in one loop with the checks of a single comparison: a value of the
    // wrong type is reported (invalid fetch request, naming the value), a list of object IDs matches a to-one.
    @Test func inListsCheckEveryValue_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            do {
                _ = try fetchItems(ctx, .in("id", [Int64(1), "two"]))
                Issue.record("a string in an integer IN list was accepted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .invalidFetchRequest)
                #expect("\(error)".contains("two"))
            }
            let items = try fetchItems(ctx)
            let tags = (0..<2).map { n -> Tag in
                let tag = Tag(context: ctx)
                tag.name = "t\(n)"
                return tag
            }
            items[0].tag = tags[0]
            items[2].tag = tags[1]
            try ctx.save()
            let tagged = try fetchItems(ctx, .in("tag", stored: tags.map { .objectID($0.objectID) }))
            #expect(tagged.map(\.id) == [1, 3])
            do {
                _ = try fetchItems(ctx, .in("tag", stored: [.objectID(tags[0].objectID), .integer(7)]))
                Issue.record("an integer in a relationship IN list was accepted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .invalidFetchRequest)
            }
        }
    }
}
