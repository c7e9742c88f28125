import Foundation
import Testing
@testable import ObjectGraph

// Docs §3.7 and §8 (semantics §3.7 query generations, §8 connection pool): a generation is a read transaction on a
// connection taken out of the store's pool, given back when the generation ends. When the generation cannot be
// taken (its first read fails), the connection goes back to the pool once: the pool then counts the readers it
// really has, and never hands one connection to two reads at once.
@Suite struct GenerationOpenFailureTests {
    @Test("§3.7, §8: a generation whose first read fails gives its connection back to the pool once, and the pinned fetch fails with the store's error")
    func failedGenerationGivesItsReaderBackOnce() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let path = stack.url.path
        // An idle reader in the pool: the generation takes it out.
        let warm = stack.context(name: "warm")
        #expect(try QueryGenerationTests.prices(warm) == [10, 20])
        #expect(stack.coordinator.openReadConnections == 1)
        // The generation's first read (its SELECT on the metadata table) fails.
        _ = try stack.sql("DROP TABLE Z_METADATA")
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        #expect(throws: ObjectGraphError.self) { _ = try QueryGenerationTests.prices(view) }
        #expect(view.queryGenerationToken?.isBound == false, "no generation was taken; the next read tries again")
        // The reader is back in the pool, counted once: as many readers counted as connections open beside the writer.
        #expect(stack.coordinator.openReadConnections == 1)
        #expect(stack.coordinator.openReadConnections == SQLiteConnection.openConnections(path: path) - 1,
                "the pool counts the readers it has")
    }
}
