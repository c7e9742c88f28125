import Foundation
import Testing
@testable import ObjectGraph
import SeededRandom

// The ID table under the row cache and the registries: whatever the order of inserts and removals (in key order, as
// a chunk's objects go; at random, as a merge's do), it holds exactly what a dictionary would.
@Suite struct IDTableTests {
    static let model = try! makeModel()
    static var item: EntityDescription { model.entity(named: "Item")! }
    static var tag: EntityDescription { model.entity(named: "Tag")! }

    static func id(_ key: Int64, _ entity: EntityDescription = item, store: UInt32 = 1) -> ManagedObjectID {
        ManagedObjectID(entity: entity, primaryKey: key, storeNumber: store)
    }

    /// Checks `table` against `expected`: the same entries, found by key and by walking the slots.
    static func agree(_ table: IDTable<Int>, _ expected: [ManagedObjectID: Int]) {
        #expect(table.count == expected.count)
        for (id, value) in expected { #expect(table[id] == value) }
        var walked: [ManagedObjectID: Int] = [:]
        table.forEachSlot { walked[table.key(at: $0)] = table[slot: $0] }
        #expect(walked == expected)
    }

    @Test("Inserts, then removals in key order, keep every other entry reachable")
    func removalsInKeyOrder() {
        let table = IDTable<Int>()
        var expected: [ManagedObjectID: Int] = [:]
        for key in Int64(1)...5_000 {
            table[Self.id(key), default: 0] += Int(key)
            expected[Self.id(key)] = Int(key)
        }
        Self.agree(table, expected)
        for key in stride(from: Int64(1), through: 5_000, by: 1) where key % 3 != 0 {
            #expect(table.removeValue(forKey: Self.id(key)) == Int(key))
            expected[Self.id(key)] = nil
        }
        Self.agree(table, expected)
        // Slots freed by removals are taken again.
        for key in Int64(5_001)...9_000 {
            table.updateValue(Int(key), forKey: Self.id(key))
            expected[Self.id(key)] = Int(key)
        }
        Self.agree(table, expected)
    }

    @Test("Keys 16 apart, and a table grown from empty, keep every entry")
    func keysSixteenApart() {
        let table = IDTable<Int>()
        var expected: [ManagedObjectID: Int] = [:]
        for n in Int64(1)...20_000 {
            table.updateValue(Int(n), forKey: Self.id(n * 16))
            expected[Self.id(n * 16)] = Int(n)
        }
        Self.agree(table, expected)
        #expect(table.capacity <= 65_536)
    }

    @Test("Random inserts, updates and removals agree with a dictionary; IDs differing by entity or store are distinct")
    func randomOperationsAgreeWithADictionary() {
        var generator = SeededGenerator(seed: 7)
        let table = IDTable<Int>()
        var expected: [ManagedObjectID: Int] = [:]
        for step in 0..<40_000 {
            let key = Int64.random(in: 1...3_000, using: &generator)
            let id = Self.id(key, Bool.random(using: &generator) ? Self.item : Self.tag, store: UInt32.random(in: 1...2, using: &generator))
            switch Int.random(in: 0..<4, using: &generator) {
            case 0, 1:
                #expect(table.updateValue(step, forKey: id) == expected.updateValue(step, forKey: id))
            case 2:
                #expect(table.removeValue(forKey: id) == expected.removeValue(forKey: id))
            default:
                if let slot = table.index(forKey: id) {
                    #expect(table.remove(at: slot) == expected.removeValue(forKey: id))
                } else {
                    #expect(expected[id] == nil)
                }
            }
        }
        Self.agree(table, expected)
        table.reserveCapacity(10_000)
        Self.agree(table, expected)
        table.removeAll()
        Self.agree(table, [:])
    }
}
