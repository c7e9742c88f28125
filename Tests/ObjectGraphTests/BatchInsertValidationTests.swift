import Foundation
import Testing
@testable import ObjectGraph

/// What a batch insert refuses before it writes anything (Docs/coredata-behaviour.md §6): a row without a value
/// for a required attribute (non-optional, no default) and a row with a key that is not a stored attribute. The
/// error names the entity, the row and the property, and the whole request writes nothing: no row, no history
/// transaction, no primary key taken.
@Suite struct BatchInsertValidationTests {
    /// Car: `numberPlate` required without a default and unique, `maker` and `model` optional, `doors` required
    /// with a default (CoreDataPlus's Car, plus one attribute a row may leave out).
    static let json = """
    {"entities": [
      {"name": "Car", "attributes": [
        {"name": "numberPlate", "type": "string", "optional": false},
        {"name": "maker", "type": "string"},
        {"name": "model", "type": "string"},
        {"name": "doors", "type": "integer64", "optional": false, "defaultValue": 4}],
       "uniquenessConstraints": [["numberPlate"]]}
    ]}
    """

    private func makeStack(_ type: PersistentStoreType = .sqlite) throws -> TestStack {
        var options = StoreOptions()
        options.persistentHistoryTracking = type == .sqlite
        return try TestStack(model: ManagedObjectModel(jsonData: Data(Self.json.utf8)), type: type, options: options)
    }

    /// Rows, history transactions and the entity's last primary key, as the file has them.
    private func written(_ stack: TestStack) throws -> [[SQLiteValue]] {
        try stack.sql("""
            SELECT (SELECT count(*) FROM ZCAR), (SELECT count(*) FROM ATRANSACTION),
                   (SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Car')
            """)
    }

    private func insert(_ rows: [[String: Any]], into stack: TestStack, policy: MergePolicy = .error) throws -> BatchResult {
        let ctx = stack.context(policy: policy)
        return try ctx.performAndWait { try ctx.execute(BatchInsertRequest(entityName: "Car", objects: rows)) }
    }

    // Docs/coredata-behaviour.md §6: CoreDataPlus test_FailedbatchInsertWithResultObjectIDs (a row with maker and
    // model, its number plate under a wrong key) throws from iOS 13 on; iOS 13 ignored unknown keys, so the
    // missing required value is what throws. Every row before it is valid, and none of them is written.
    @Test("A batch insert whose row lacks a required attribute fails with 1570 naming the row, and writes nothing")
    func rowWithoutARequiredValueFailsTheWholeBatch() throws {
        let stack = try makeStack()
        _ = try insert([["numberPlate": "A1"]], into: stack)
        let before = try written(stack)
        #expect(before == [[.integer(1), .integer(1), .integer(1)]])
        let rows: [[String: Any]] = [
            ["numberPlate": "B2", "maker": "FIAT"],
            ["maker": "FIAT", "model": "Panda"],  // no numberPlate; doors takes its default
        ]
        #expect {
            try insert(rows, into: stack, policy: .mergeByPropertyObjectTrump)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .missingMandatoryProperty && error.entityName == "Car" && error.propertyName == "numberPlate"
                && error.message.contains("row 1")
        }
        #expect(try written(stack) == before)
        // An explicit null is no value either, and a handler's object left without one is refused the same way.
        #expect { try insert([["numberPlate": NSNull()]], into: stack) } throws: {
            ($0 as? ObjectGraphError)?.code == .missingMandatoryProperty && ($0 as? ObjectGraphError)?.message.contains("row 0") == true
        }
        let ctx = stack.context()
        var calls = 0
        let handled = BatchInsertRequest(entity: try #require(stack.model.entity(named: "Car"))) { car in
            calls += 1
            try? car.setValue("FIAT", forKey: "maker")
            return calls > 1
        }
        #expect { try ctx.performAndWait { try ctx.execute(handled) } } throws: {
            ($0 as? ObjectGraphError)?.propertyName == "numberPlate"
        }
        #expect(try written(stack) == before)
    }

    // Docs/coredata-behaviour.md §6: CoreDataPlus test_batchInsertWithResultObjectIDs (iOS 14+): a row with an
    // unknown key beside a uniqueness clash in the same batch throws. The error names the key and the row, the
    // same key on every run whatever the dictionary's order, and nothing is written.
    @Test("A batch insert with an unknown key fails naming the row and the first unknown key, and writes nothing")
    func unknownKeyFailsTheWholeBatch() throws {
        let stack = try makeStack()
        let rows: [[String: Any]] = [
            ["WRONG_KEY": "FIAT", "numberPlate": "P1", "model": "Panda"],
            ["maker": "FIAT", "numberPlate": "P1", "model": "Panda*"],
            ["maker": "FIAT", "numberPlate": "P2", "model": "Panda"],
        ]
        #expect {
            try insert(rows, into: stack, policy: .mergeByPropertyObjectTrump)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .validation && error.entityName == "Car" && error.propertyName == "WRONG_KEY" && error.message.contains("row 0")
        }
        let twoUnknown: [[String: Any]] = [["numberPlate": "P3", "zeta": 1, "alpha": 2, "mid": 3]]
        #expect { try insert(twoUnknown, into: stack) } throws: { ($0 as? ObjectGraphError)?.propertyName == "alpha" }
        #expect(try written(stack) == [[.integer(0), .integer(0), .integer(0)]])
    }

    // Docs/coredata-behaviour.md §6: a row with every required value, defaults filling the rest, is written.
    @Test("A batch insert row with every required value is written, its defaults filled in")
    func rowWithRequiredValuesIsWritten() throws {
        let stack = try makeStack()
        let result = try insert([["numberPlate": "C3"]], into: stack)
        #expect(result.status)
        #expect(try stack.sql("SELECT ZNUMBERPLATE, ZMAKER, ZDOORS FROM ZCAR") == [[.text("C3"), .null, .integer(4)]])
    }

    // Docs/coredata-behaviour.md §6: an in-memory store runs no batch request; its refusal comes after the rows
    // are checked, so a bad row is reported as such there too.
    @Test("In an in-memory store a batch insert with a bad row reports the row; a valid one is refused as SQLite-only")
    func inMemoryStoreChecksRowsThenRefuses() throws {
        let stack = try makeStack(.inMemory)
        #expect { try insert([["maker": "FIAT"]], into: stack) } throws: {
            ($0 as? ObjectGraphError)?.code == .missingMandatoryProperty
        }
        #expect { try insert([["numberPlate": "D4"]], into: stack) } throws: {
            ($0 as? ObjectGraphError)?.code == .persistentStoreOperation
        }
    }
}
