import Foundation
import Testing
@testable import ObjectGraph
import SeededRandom

/// The SQL path and the in-memory path of a predicate return the same objects.
@Suite struct PredicatePropertyTests {
    static let names: [String?] = ["apple", "Apple", "Äpfel", "banana", "BANANA", "cherry", "", nil, "app*le", "x?y", "éclair", "eclair"]
    static let titles: [String?] = ["red", "Red", "blue", "green", nil]

    static func populate(_ stack: TestStack, rng: inout SeededGenerator) throws {
        let context = stack.context()
        try context.performAndWait {
            var tags: [Tag] = []
            for i in 0..<5 {
                let tag = Tag(context: context)
                tag.name = names.randomElement(using: &rng)! ?? (i.isMultiple(of: 2) ? nil : "tag\(i)")
                tags.append(tag)
            }
            var labels: [Label] = []
            for _ in 0..<4 {
                let label = Label(context: context)
                label.title = titles.randomElement(using: &rng)!
                labels.append(label)
            }
            for i in 1...40 {
                let item = Item(context: context)
                item.id = Int64(i)
                item.name = names.randomElement(using: &rng)!
                item.price = Bool.random(using: &rng) ? Double(Int.random(in: 0...100, using: &rng)) : Double.random(in: 0...100, using: &rng)
                item.flag = Bool.random(using: &rng)
                item.added = Bool.random(using: &rng) ? Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...10, using: &rng)) * 1000) : nil
                item.tag = Int.random(in: 0...5, using: &rng) == 5 ? nil : tags.randomElement(using: &rng)
                item.labels = Set(labels.filter { _ in Int.random(in: 0...2, using: &rng) == 0 })
            }
            try context.save()
        }
    }

    static func leaf(_ rng: inout SeededGenerator) -> ObjectPredicate {
        let stringOps: [PredicateComparison.Operator] = [.equalTo, .notEqualTo, .lessThan, .greaterThanOrEqualTo, .beginsWith, .endsWith, .contains, .like]
        let options: [PredicateComparison.Options] = [[], [.caseInsensitive], [.diacriticInsensitive], [.caseInsensitive, .diacriticInsensitive]]
        let numberOps: [PredicateComparison.Operator] = [.equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo]
        let someName = { (rng: inout SeededGenerator) -> String in
            ["apple", "APP", "a", "anana", "x?y", "*pp*", "äpfel", "e", "", "cher?y"].randomElement(using: &rng)!
        }
        switch Int.random(in: 0...13, using: &rng) {
        case 0:
            let op = stringOps.randomElement(using: &rng)!
            return .compare("name", op, someName(&rng), options: options.randomElement(using: &rng)!)
        case 1:
            return .compare("name", Bool.random(using: &rng) ? .equalTo : .notEqualTo, nil)
        case 2:
            let value: Any = Bool.random(using: &rng) ? Int.random(in: 0...100, using: &rng) : Double.random(in: 0...100, using: &rng)
            return .compare("price", numberOps.randomElement(using: &rng)!, value)
        case 3:
            return .in("id", (0..<Int.random(in: 0...5, using: &rng)).map { _ in Int.random(in: 1...45, using: &rng) })
        case 4:
            let lo = Int.random(in: 0...60, using: &rng)
            return .compare("price", .between, [lo, lo + Int.random(in: 0...40, using: &rng)])
        case 5:
            return .compare("flag", .equalTo, Bool.random(using: &rng))
        case 6:
            if Bool.random(using: &rng) { return .compare("added", Bool.random(using: &rng) ? .equalTo : .notEqualTo, nil) }
            return .compare("added", numberOps.randomElement(using: &rng)!, Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...10, using: &rng)) * 1000))
        case 7:
            return .compare("tag.name", stringOps.randomElement(using: &rng)!, someName(&rng), options: options.randomElement(using: &rng)!)
        case 8:
            return .compare("tag", Bool.random(using: &rng) ? .equalTo : .notEqualTo, nil)
        case 9:
            let modifier: PredicateComparison.Modifier = [.any, .all, .none].randomElement(using: &rng)!
            return .compare("labels.title", [.equalTo, .beginsWith, .notEqualTo].randomElement(using: &rng)!,
                            ["red", "re", "blue", "B"].randomElement(using: &rng)!, options: options.randomElement(using: &rng)!, modifier: modifier)
        case 10:
            return .compare("labels.@count", numberOps.randomElement(using: &rng)!, Int.random(in: 0...4, using: &rng))
        case 11:
            return .compare("name", .matches, ["a.*", ".*[Aa].*", "b.n.n.", "[a-z]+", ".*"].randomElement(using: &rng)!, options: options.randomElement(using: &rng)!)
        case 12:
            return .compare("tag.items.@count", numberOps.randomElement(using: &rng)!, Int.random(in: 0...12, using: &rng))
        default:
            return .compare("labels.@sum.title", .greaterThan, 1)  // not numeric: evaluated in memory
        }
    }

    static func predicate(_ rng: inout SeededGenerator, depth: Int = 0) -> ObjectPredicate {
        guard depth < 3, Int.random(in: 0...2, using: &rng) == 0 else { return leaf(&rng) }
        switch Int.random(in: 0...2, using: &rng) {
        case 0: return .and([predicate(&rng, depth: depth + 1), predicate(&rng, depth: depth + 1)])
        case 1: return .or([predicate(&rng, depth: depth + 1), predicate(&rng, depth: depth + 1)])
        default: return .not(predicate(&rng, depth: depth + 1))
        }
    }

    /// Found by input fuzzing: `name !=[c] nil`, `name !=[cd] nil` and `name ==[cd] nil` returned
    /// no rows from SQL. Every comparison with nil, for every operator and modifier, written either way round and
    /// in a list, agrees in SQL and in memory (semantics §5: a fetch's predicate means the same in the store).
    @Test func everyComparisonWithNilAgrees_19() throws {
        let stack = try TestStack()
        var rng = SeededGenerator(seed: 19)
        try Self.populate(stack, rng: &rng)
        let item = try #require(stack.model.entity(named: "Item"))
        let context = stack.context()
        let modifiers = ["", "[c]", "[d]", "[cd]"]
        let operators = ["==", "!=", "<", "<=", ">", ">=", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES"]
        var formats: [String] = []
        for op in operators {
            for m in modifiers {
                formats.append("name \(op)\(m) nil")
                formats.append("NOT (name \(op)\(m) nil)")
                if ["==", "!="].contains(op) { formats.append("nil \(op)\(m) name") }
            }
        }
        for m in modifiers { formats += ["name IN\(m) {nil, 'apple'}", "NOT (name IN\(m) {nil, 'apple'})"] }
        var translated = 0
        try context.performAndWait {
            var all = FetchRequest(entityName: "Item")
            all.returnsObjectsAsFaults = false
            let objects = try context.fetch(all)
            #expect(objects.contains { $0.value(forKey: "name") == nil } && objects.contains { $0.value(forKey: "name") != nil })
            for format in formats {
                let p = try ObjectPredicate(format: format)
                let storeFetch = StoreFetch(entity: item, predicate: p, sortDescriptors: [], limit: 0, offset: 0, idsOnly: true)
                if try stack.coordinator.withStore({ $0.canEvaluate(storeFetch) }) { translated += 1 }
                let viaStore = Set(try context.fetchObjectIDs(FetchRequest(entityName: "Item", predicate: p)))
                let inMemory = Set(try objects.filter { try p.evaluate(with: $0) }.map(\.objectID))
                if viaStore != inMemory { Issue.record("\(format): SQL gives \(viaStore.count) rows, memory \(inMemory.count)") }
            }
        }
        // The comparisons reach SQL (or this would compare memory with memory).
        #expect(translated == formats.count)
    }

    @Test func sqlAndMemoryAgreeOnGeneratedPredicates() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREDICATE_SEED"] ?? "") ?? 20261122
        var rng = SeededGenerator(seed: seed)
        let stack = try TestStack()
        try Self.populate(stack, rng: &rng)
        let item = try #require(stack.model.entity(named: "Item"))
        let context = stack.context()
        var translated = 0
        let cases = 1000
        try context.performAndWait {
            var all = FetchRequest(entityName: "Item")
            all.returnsObjectsAsFaults = false
            let objects = try context.fetch(all)
            for n in 0..<cases {
                let p = Self.predicate(&rng)
                let storeFetch = StoreFetch(entity: item, predicate: p, sortDescriptors: [], limit: 0, offset: 0, idsOnly: true)
                if try stack.coordinator.withStore({ $0.canEvaluate(storeFetch) }) { translated += 1 }
                let viaStore = Set(try context.fetchObjectIDs(FetchRequest(entityName: "Item", predicate: p)))
                let inMemory = Set(try objects.filter { try p.evaluate(with: $0) }.map(\.objectID))
                if viaStore != inMemory {
                    Issue.record("seed \(seed), case \(n): \(p)\nSQL only: \(viaStore.subtracting(inMemory).map { $0.primaryKey ?? 0 }.sorted()) memory only: \(inMemory.subtracting(viaStore).map { $0.primaryKey ?? 0 }.sorted())")
                    return
                }
            }
        }
        // Most generated shapes must really reach SQL, or the test would compare memory with memory.
        #expect(translated > cases * 8 / 10, "only \(translated) of \(cases) predicates were translated to SQL (seed \(seed))")
    }

    @Test func sqlAndMemorySortTheSameWay() throws {
        var rng = SeededGenerator(seed: 7)
        let stack = try TestStack()
        try Self.populate(stack, rng: &rng)
        let context = stack.context()
        try context.performAndWait {
            for sort in [[ObjectSortDescriptor("name"), ObjectSortDescriptor("id")], [ObjectSortDescriptor("added", ascending: false), ObjectSortDescriptor("id")],
                         [ObjectSortDescriptor("tag.name"), ObjectSortDescriptor("price", ascending: false), ObjectSortDescriptor("id")]] {
                let viaSQL = try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: sort))
                let keyed = try viaSQL.map { o in (o, try sort.map { try o.sortValue($0.key) }) }
                let inMemory = keyed.sorted { SortOrdering.precedes($0.1, $1.1, sort) }.map(\.0.objectID)
                #expect(viaSQL.map(\.objectID) == inMemory, "sort \(sort)")
            }
        }
    }
}
