import Testing
@testable import ObjectGraph

// Sizes the fetch path depends on: every byte of a per-row structure is memory a large fetch touches for the first
// time (Benchmarks/README.md, "fetch 100k as faults and fire them"). Swift lays a struct's fields out in the order
// they are declared (what the compiler does, not a promise of the language: these tests say when it changes).
@Suite struct LayoutTests {
    @Test func anObjectIDTakesTwentyBytes() {
        #expect(MemoryLayout<ManagedObjectID>.size == 20)
    }

    @Test func aFetchEntryKeepsItsFlagInTheIDsPadding() {
        #expect(MemoryLayout<FetchEntry>.stride == 48)
    }

    @Test func aRowCacheEntryKeepsItsCountAndFlagInOneWord() {
        #expect(RowCache.entryStride == 48)
    }
}
