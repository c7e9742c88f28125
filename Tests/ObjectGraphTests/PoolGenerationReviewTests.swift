import Foundation
import Testing
@testable import ObjectGraph

/// Review of issue 22 item 8 (read connections beside the writer) and issue 21 item 4 (query generations): the
/// defects found, each stated as the rule it broke (Docs/coredata-behaviour.md §3.7, §8; semantics §3.7, §8).
@Suite struct PoolGenerationReviewTests {
    @Test("§3.7 (semantics §3.7: WAL only, otherwise quietly unpinned): a read-only store on a file in rollback-journal mode holds no generation, so a writer of the file is not locked out")
    func readOnlyRollbackStoreHoldsNoGeneration() throws {
        var options = StoreOptions()
        options.pragmas["journal_mode"] = "DELETE"
        options.busyTimeout = 0.2
        let stack = try TestStack(options: options)
        try stack.seed(2)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        readOnly.busyTimeout = 0.2
        let reading = try stack.secondCoordinator(options: readOnly)
        #expect(!reading.supportsQueryGenerations, "the file is not in WAL mode")
        let view = stack.context(reading, name: "view")
        try view.setQueryGenerationFrom(.current)
        #expect(view.queryGenerationToken == nil, "quietly unpinned: no generation outside WAL")
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        // A rollback-journal read transaction held open would keep this commit from getting its lock.
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [11, 21])
    }

    @Test("§3.7, §8: a read-only store on a WAL file keeps its read connections and generations (the file's own mode decides)")
    func readOnlyWALStoreKeepsItsReaders() throws {
        let stack = try TestStack()
        try stack.seed(2)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let reading = try stack.secondCoordinator(options: readOnly)
        #expect(reading.supportsQueryGenerations)
        let view = stack.context(reading, name: "view")
        try view.setQueryGenerationFrom(.current)
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [10, 20], "pinned")
        #expect(reading.openReadConnections == 0, "the generation's connection is outside the pool")
    }

    @Test("§8: with locking_mode EXCLUSIVE (set through the pragmas) no other connection can read the file: reads stay on the writer's connection instead of failing with a busy timeout")
    func exclusiveLockingModeHasNoReaders() throws {
        var options = StoreOptions()
        options.pragmas["locking_mode"] = "EXCLUSIVE"
        options.busyTimeout = 0.2
        let stack = try TestStack(options: options)
        try stack.seed(2)
        let view = stack.context(name: "view")
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [11, 21])
        #expect(stack.coordinator.openReadConnections == 0)
        #expect(!stack.coordinator.supportsQueryGenerations)
    }

    @Test("§3.7: a pinned context that goes away without unpinning ends its generation: the WAL is checkpointed whole")
    func deallocatedPinnedContextEndsItsGeneration() throws {
        let stack = try TestStack()
        try stack.seed(3)
        do {
            let view = stack.context(name: "view")
            try view.setQueryGenerationFrom(.current)
            _ = try QueryGenerationTests.prices(view)
            for round in 1...3 { try QueryGenerationTests.raisePrices(stack, by: Double(round)) }
            let held = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
            #expect(held[2].int64! < held[1].int64!)
        }
        let released = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
        #expect(released[2].int64! == released[1].int64!, "the generation ended with its context: \(released)")
    }
}
