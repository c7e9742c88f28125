import Foundation
import Testing
@testable import ObjectGraph

/// Semantics §4: every operator, option, literal and argument kind of the format language,
/// run through the store (SQL where translatable) and in memory, with the same expected answer.
@Suite struct PredicateOperatorTests {
    static let d0 = Date(timeIntervalSinceReferenceDate: 1_000)
    static let d1 = Date(timeIntervalSinceReferenceDate: 2_000)

    struct Fixture {
        let stack: TestStack
        let red: ManagedObjectID, blue: ManagedObjectID
        let x: ManagedObjectID
        let items: [Int64: ManagedObjectID]
    }

    /// Items:   1 "apple" 10 flag  d0  red  {x}        2 "Apple pie" 20  -    nil red  {x, y}
    ///          3 "banana" 30 flag d1  blue {}         4 "éclair" 40     -    nil  –   {y}
    ///          5 nil 50            -  nil blue {x, y, z}
    /// Labels x "red", y "blue", z "green". Tags red (10 + 20), blue (30 + 50).
    static func fixture() throws -> Fixture {
        let stack = try TestStack()
        let ctx = stack.context()
        return try ctx.performAndWait {
            let red = Tag(context: ctx), blue = Tag(context: ctx)
            red.name = "red"
            blue.name = "blue"
            let x = Label(context: ctx), y = Label(context: ctx), z = Label(context: ctx)
            x.title = "red"
            y.title = "blue"
            z.title = "green"
            let rows: [(String?, Double, Bool, Date?, Tag?, Set<Label>)] = [
                ("apple", 10, true, d0, red, [x]), ("Apple pie", 20, false, nil, red, [x, y]), ("banana", 30, true, d1, blue, []),
                ("éclair", 40, false, nil, nil, [y]), (nil, 50, false, nil, blue, [x, y, z]),
            ]
            var items: [Item] = []
            for (n, row) in rows.enumerated() {
                let item = Item(context: ctx)
                item.id = Int64(n + 1)
                (item.name, item.price, item.flag, item.added, item.tag, item.labels) = row
                items.append(item)
            }
            try ctx.save()
            return Fixture(stack: stack, red: red.objectID, blue: blue.objectID, x: x.objectID,
                           items: Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0.objectID) }))
        }
    }

    /// Item ids matching `predicate` through the store and in memory; both must agree.
    static func ids(_ f: Fixture, _ predicate: ObjectPredicate, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Int64] {
        let ctx = f.stack.context()
        return try ctx.performAndWait {
            let viaStore = ctxIDs(try fetchItems(ctx, predicate)).sorted()
            let inMemory = try fetchItems(ctx).filter { try predicate.evaluate(with: $0) }.map(\.id).sorted()
            #expect(viaStore == inMemory, "store and memory disagree on \(predicate)", sourceLocation: sourceLocation)
            return viaStore
        }
    }

    static let formatCases: [(String, [Int64])] = [
        // Comparisons, each spelling.
        ("price == 10", [1]), ("price = 10", [1]), ("price != 10", [2, 3, 4, 5]), ("price <> 10", [2, 3, 4, 5]),
        ("price < 30", [1, 2]), ("price <= 30", [1, 2, 3]), ("price =< 30", [1, 2, 3]),
        ("price > 30", [4, 5]), ("price >= 30", [3, 4, 5]), ("price => 30", [3, 4, 5]),
        ("10 < price", [2, 3, 4, 5]),
        ("price BETWEEN {20, 40}", [2, 3, 4]), ("price NOT BETWEEN {20, 40}", [1, 5]),
        ("id IN {1, 3, 9}", [1, 3]), ("NOT id IN {1, 3, 9}", [2, 4, 5]), ("name IN {'apple', 'banana'}", [1, 3]),
        ("name IN[c] {'APPLE'}", [1]),
        // String operators and options.
        ("name CONTAINS 'an'", [3]), ("name CONTAINS[c] 'APP'", [1, 2]), ("name CONTAINS 'é'", [4]),
        ("name BEGINSWITH 'App'", [2]), ("name BEGINSWITH[c] 'app'", [1, 2]), ("name BEGINSWITH[cd] 'ECL'", [4]),
        ("name ENDSWITH 'pie'", [2]), ("name ENDSWITH[c] 'PIE'", [2]),
        ("name LIKE 'a*e'", [1]), ("name LIKE[c] 'a*e'", [1, 2]), ("name LIKE '?anana'", [3]),
        ("name MATCHES 'b.n.n.'", [3]), ("name MATCHES[c] 'APPLE.*'", [1, 2]),
        ("name ==[d] 'eclair'", [4]), ("name ==[cd] 'ÉCLAIR'", [4]), ("name ==[c] 'APPLE'", [1]), ("name == 'APPLE'", []),
        // Literals.
        ("name == nil", [5]), ("name = NULL", [5]), ("name != NIL", [1, 2, 3, 4]),
        ("flag == YES", [1, 3]), ("flag == TRUE", [1, 3]), ("flag == NO", [2, 4, 5]), ("flag = FALSE", [2, 4, 5]),
        ("price == 10.0", [1]), ("price > -1", [1, 2, 3, 4, 5]), ("name == \"banana\"", [3]),
        ("TRUEPREDICATE", [1, 2, 3, 4, 5]), ("FALSEPREDICATE", []),
        // Connectives.
        ("price > 10 AND price < 40", [2, 3]), ("price < 20 && flag == YES", [1]), ("price == 10 OR price == 50", [1, 5]),
        ("price == 10 || id == 2", [1, 2]), ("NOT price > 20", [1, 2]), ("!(price > 20)", [1, 2]),
        ("NOT (flag == YES OR price > 40)", [2, 4]), ("price > 10 and flag == no or id == 1", [1, 2, 4, 5]),
        // SELF, to-one key paths.
        ("SELF != nil", [1, 2, 3, 4, 5]), ("tag.name == 'red'", [1, 2]), ("tag.name BEGINSWITH[c] 'B'", [3, 5]),
        ("tag == nil", [4]), ("SELF.tag.name == 'blue'", [3, 5]),
        // To-many: ANY / SOME / ALL / NONE and the collection operators.
        ("ANY labels.title == 'red'", [1, 2, 5]), ("SOME labels.title == 'blue'", [2, 4, 5]),
        ("ALL labels.title == 'red'", [1, 3]), ("NONE labels.title == 'red'", [3, 4]),
        ("ANY labels.title BEGINSWITH[c] 'G'", [5]),
        ("labels.@count == 0", [3]), ("labels.@count >= 2", [2, 5]), ("tag.items.@count == 2", [1, 2, 3, 5]),
    ]

    // Semantics §4: each operator through the store and in memory.
    @Test func everyOperatorOptionAndLiteral_4() throws {
        let f = try Self.fixture()
        for (format, expected) in Self.formatCases {
            let predicate = try ObjectPredicate(format: format)
            #expect(try Self.ids(f, predicate) == expected, "\(format)")
        }
    }

    // Semantics §4: arguments %@ %K %d %i %ld %lld %u %f, with values of every kind, and $VARIABLE substitution.
    @Test func everyArgumentKind_4() throws {
        let f = try Self.fixture()
        let cases: [(String, [Any?], [Int64])] = [
            ("%K == %@", ["name", "banana"], [3]), ("%K.name == %@", ["tag", "red"], [1, 2]),
            ("price > %d", [25], [3, 4, 5]), ("price > %i", [25], [3, 4, 5]), ("price > %ld", [25], [3, 4, 5]),
            ("price > %lld", [Int64(25)], [3, 4, 5]), ("price > %u", [UInt(25)], [3, 4, 5]), ("price < %f", [15.5], [1]),
            ("price < %@", [15.5], [1]), ("flag == %@", [true], [1, 3]), ("name == %@", [nil], [5]),
            ("added == %@", [Self.d0], [1]), ("added > %@", [Self.d0], [3]),
            ("id IN %@", [[2, 4]], [2, 4]), ("price BETWEEN %@", [[15, 35]], [2, 3]),
            ("tag == %@", [f.red], [1, 2]), ("SELF == %@", [f.items[3]], [3]), ("SELF IN %@", [[f.items[1]!, f.items[5]!]], [1, 5]),
            ("labels CONTAINS %@", [f.x], [1, 2, 5]), ("ANY labels == %@", [f.x], [1, 2, 5]),
        ]
        for (format, arguments, expected) in cases {
            let predicate = try ObjectPredicate(format: format, argumentArray: arguments)
            #expect(try Self.ids(f, predicate) == expected, "\(format) \(arguments)")
        }
        let template = try ObjectPredicate(format: "price > $MIN AND name != $NAME")
        #expect(try Self.ids(f, template.withSubstitutionVariables(["MIN": 15, "NAME": "banana"])) == [2, 4, 5])
        let ctx = f.stack.context()
        try ctx.performAndWait {
            let one = try #require(try fetchItems(ctx).first)
            #expect(try template.evaluate(with: one, variables: ["MIN": 5, "NAME": "x"]))
            #expect(try !template.evaluate(with: one, variables: ["MIN": 50, "NAME": "x"]))
        }
    }

    // Semantics §4: @sum, @avg, @min, @max and @count over a to-many relationship.
    @Test func collectionOperators_4() throws {
        let f = try Self.fixture()
        let ctx = f.stack.context()
        try ctx.performAndWait {
            for (format, expected) in [
                ("items.@sum.price > 50", ["blue"]), ("items.@avg.price == 15", ["red"]), ("items.@min.price == 30", ["blue"]),
                ("items.@max.price < 30", ["red"]), ("items.@count == 2", ["blue", "red"]), ("ANY items.price > 45", ["blue"]),
            ] {
                let predicate = try ObjectPredicate(format: format)
                let request = FetchRequest(entityName: "Tag", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("name")])
                let viaStore = try ctx.fetch(request, as: Tag.self).compactMap(\.name)
                let inMemory = try ctx.fetch(FetchRequest(entityName: "Tag", sortDescriptors: [ObjectSortDescriptor("name")]), as: Tag.self)
                    .filter { try predicate.evaluate(with: $0) }.compactMap(\.name)
                #expect(viaStore == expected, "\(format)")
                #expect(inMemory == expected, "\(format) in memory")
            }
        }
    }

    // Bad input: more malformed strings, each naming the column and what was expected.
    @Test(arguments: [
        ("price > %x", 10, "a format specifier (%@, %K, %d, %i, %ld, %f)"),
        ("price > $", 10, "a variable name after $"),
        ("id IN {1, 2", 12, "',' or '}'"),
        ("ANY", 4, "a key path or value"),
        ("price >", 8, "a key path or value"),
    ])
    func moreMalformedFormatsNameTheColumn_4(format: String, column: Int, expected: String) {
        #expect {
            try ObjectPredicate(format: format)
        } throws: { error in
            guard let e = error as? PredicateFormatError else { return false }
            return e.column == column && e.expected == expected && e.description.contains("column \(column)")
        }
    }

    // Bad input: arguments of the wrong kind for their specifier, and too few or too many.
    @Test func argumentsOfTheWrongKind_4() {
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "%K == 1", 5) }
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "price > %d", "ten") }
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "price > %f", "x") }
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "%K == %@", "name") }
        #expect(throws: PredicateFormatError.self) { try ObjectPredicate(format: "price > 1", 2) }
    }

    // Bad input (semantics §4): type mismatches are errors in the store and in memory (pending changes).
    @Test func typeMismatchFailsInTheStoreAndInMemory_4() throws {
        let f = try Self.fixture()
        let ctx = f.stack.context()
        try ctx.performAndWait {
            for format in ["price > 'abc'", "flag == 'yes'", "added < 'soon'", "name > 3"] {
                let predicate = try ObjectPredicate(format: format)
                #expect(throws: ObjectGraphError.self, "\(format)") { try ctx.fetch(ctxItemRequest(predicate)) }
            }
            let pending = Item(context: ctx)
            pending.id = 99
            #expect(throws: ObjectGraphError.self) { try ctx.fetch(ctxItemRequest(try ObjectPredicate(format: "price > 'abc'"))) }
        }
    }

    // Performance: index-friendly shapes (==, IN, ranges, to-one equality) reach SQLite as such —
    // the generated text keeps the bare column, and SQLite's plan searches an index instead of scanning.
    @Test func indexFriendlyPredicatesSearchAnIndex_4() throws {
        let f = try Self.fixture()
        let entity = try #require(f.stack.model.entity(named: "Item"))
        for (predicate, expectedSQL, index) in [
            (try ObjectPredicate(format: "id == 3"), "t0.ZID = ?", "ZITEM_UNIQUE_0"),
            (try ObjectPredicate(format: "id IN %@", [1, 2, 3]), "t0.ZID IN (?, ?, ?)", "ZITEM_UNIQUE_0"),
            (ObjectPredicate.in("id", [4, 5]), "t0.ZID IN (?, ?)", "ZITEM_UNIQUE_0"),
            (try ObjectPredicate(format: "id BETWEEN {2, 4}"), "(t0.ZID >= ? AND t0.ZID <= ?)", "ZITEM_UNIQUE_0"),
            (try ObjectPredicate(format: "id > 2 AND id <= 4"), "(t0.ZID > ? AND t0.ZID <= ?)", "ZITEM_UNIQUE_0"),
            (try ObjectPredicate(format: "tag == %@", f.red), "t0.ZTAG = ?", "ZITEM_ZTAG_INDEX"),
        ] {
            var builder = SQLiteQueryBuilder(root: entity)
            let condition = try builder.condition(predicate.node)
            #expect(condition == expectedSQL)
            let plan = try f.stack.sql("EXPLAIN QUERY PLAN SELECT t0.Z_PK FROM ZITEM t0 WHERE \(condition)").compactMap { $0.last?.string }.joined(separator: "; ")
            #expect(plan.contains("SEARCH") && plan.contains(index), "\(predicate): \(plan)")
        }
    }
}
