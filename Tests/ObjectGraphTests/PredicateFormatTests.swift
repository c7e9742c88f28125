import Foundation
import Testing
@testable import ObjectGraph

/// Semantics §4 (fetching): the NSPredicate format language.
@Suite struct PredicateFormatTests {
    @Test func parsesComparisonsConnectivesAndArguments() throws {
        let p = try ObjectPredicate(format: "name BEGINSWITH[c] %@ AND price > %@ OR NOT flag == YES", "a", 10)
        #expect(p.description == "((name BEGINSWITH[c] \"a\" AND price > 10) OR NOT flag == true)")
        let k = try ObjectPredicate(format: "%K == %d && %K <> nil", "id", 7, "name")
        #expect(k.description == "(id == 7 AND name != nil)")
        let list = try ObjectPredicate(format: "id IN {1, 2, 3} AND price BETWEEN {10, 20.5}")
        #expect(list.description == "(id IN {1, 2, 3} AND price BETWEEN {10, 20.5})")
        let any = try ObjectPredicate(format: "ANY labels.title ==[cd] 'x' AND labels.@count >= 2 AND SELF != nil")
        #expect(any.description == "(ANY labels.title ==[cd] \"x\" AND labels.@count >= 2 AND SELF != nil)")
        #expect(try ObjectPredicate(format: "TRUEPREDICATE") == .true)
        #expect(try ObjectPredicate(format: "price > -5.5").description == "price > -5.5")
        #expect(try ObjectPredicate(format: "name NOT IN %@", ["a"]).description == "NOT name IN {\"a\"}")
    }

    @Test func variablesAreSubstituted() throws {
        let p = try ObjectPredicate(format: "price > $LIMIT")
        let filled = p.withSubstitutionVariables(["LIMIT": 5])
        #expect(filled.description == "price > 5")
    }

    @Test(arguments: [
        ("name ==", 8, "a key path or value"),
        ("name ~ 'a'", 6, "an operator, key path or value"),
        ("(price > 1", 11, "')'"),
        ("price > 1 price", 11, "AND, OR or the end of the predicate"),
        ("name == 'abc", 9, "a closing '"),
        ("name LIKE[x] 'a'", 11, "c, d or cd inside [ ]"),
        ("price BETWEEN {1}", 18, "a two-element array after BETWEEN"),
    ])
    func malformedFormatsNameTheColumn(format: String, column: Int, expected: String) {
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: format) }
        do {
            _ = try ObjectPredicate(format: format)
        } catch let error as PredicateFormatError {
            #expect(error.column == column)
            #expect(error.expected == expected)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func argumentCountMustMatch() {
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "name == %@") }
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "name == %@", "a", "b") }
    }

    @Test func typeMismatchAndUnknownKeyAreErrorsNamingTheEntity() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let context = stack.context()
        try context.performAndWait {
            let mismatch = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: "price > 'abc'"))
            #expect {
                try context.fetch(mismatch)
            } throws: { error in
                (error as? ObjectGraphError)?.code == .invalidFetchRequest && (error as? ObjectGraphError)?.entityName == "Item"
            }
            let unknown = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: "colour == 'red'"))
            #expect {
                try context.fetch(unknown)
            } throws: { error in
                (error as? ObjectGraphError)?.propertyName == "colour"
            }
        }
    }

    @Test func indexFriendlyShapesReachSQLAsSuch() throws {
        let stack = try TestStack()
        var builder = SQLiteQueryBuilder(root: try #require(stack.model.entity(named: "Item")))
        let sql = try builder.condition(try ObjectPredicate(format: "id == 3 AND id IN {1, 2} AND price >= 10 AND price < 20").node)
        #expect(sql == "(t0.ZID = ? AND t0.ZID IN (?, ?) AND t0.ZPRICE >= ? AND t0.ZPRICE < ?)")
        var sub = SQLiteQueryBuilder(root: try #require(stack.model.entity(named: "Tag")))
        let exists = try sub.condition(try ObjectPredicate(format: "ANY items.price > 5").node)
        #expect(exists.hasPrefix("EXISTS (SELECT 1 FROM ZITEM"))
    }
}
