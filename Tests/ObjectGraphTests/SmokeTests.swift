import Foundation
import Testing
@testable import ObjectGraph

@Suite struct SmokeTests {
    @Test func insertSaveFetchRoundTrip() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        #expect(ids.filter { $0.isTemporaryID }.isEmpty)
        let reader = stack.context()
        try reader.performAndWait {
            let items = try fetchItems(reader)
            #expect(items.filter { $0.isFault }.count == 3)
            #expect(items.map(\.id) == [1, 2, 3])
            #expect(items[1].name == "item 2")
            #expect(items[1].price == 20)
        }
    }
}
