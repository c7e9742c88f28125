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
}
