/// A set of slot indices kept as bits: the changed slots of an object (semantics §1.5 `locallyChanged`) and the
/// slots changed since the last objects-did-change. Every attribute set records its slot here, so an insert or
/// membership test is a bit operation instead of a hashed `Set<Int>` insert (two per attribute set during an
/// import). Slots 0–63 live in one word; larger entities spill into an array of words. Iterates in ascending
/// slot order.
struct SlotSet: Sequence, Hashable, ExpressibleByArrayLiteral {
    private var low: UInt64 = 0
    private var high: [UInt64]? = nil  // nil (no array to count references to) for entities of ≤ 64 slots

    init() {}

    init(arrayLiteral slots: Int...) { self.init(slots) }

    init<S: Sequence>(_ slots: S) where S.Element == Int {
        for slot in slots { insert(slot) }
    }

    var isEmpty: Bool {
        @inline(__always) get { low == 0 && (high == nil || high!.allSatisfy { $0 == 0 }) }
    }

    var count: Int { (high ?? []).reduce(low.nonzeroBitCount) { $0 + $1.nonzeroBitCount } }

    // The low word's case is inlined into every caller (each attribute set inserts twice, the store compares the
    // sets of consecutive rows); the words beyond it are handled out of line. As calls they were 0.1k
    // instructions per updated item.
    @inline(__always)
    func contains(_ slot: Int) -> Bool {
        if slot < 64 { return low & (1 << UInt64(slot)) != 0 }
        return highContains(slot)
    }

    private func highContains(_ slot: Int) -> Bool {
        let word = slot / 64 - 1
        guard let high, word < high.count else { return false }
        return high[word] & (1 << UInt64(slot % 64)) != 0
    }

    @inline(__always)
    mutating func insert(_ slot: Int) {
        if slot < 64 {
            low |= 1 << UInt64(slot)
            return
        }
        insertHigh(slot)
    }

    private mutating func insertHigh(_ slot: Int) {
        let word = slot / 64 - 1
        var words = high ?? []
        high = nil  // uniquely referenced while it changes
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(slot % 64)
        high = words
    }

    @inline(__always)
    mutating func remove(_ slot: Int) {
        if slot < 64 {
            low &= ~(1 << UInt64(slot))
            return
        }
        removeHigh(slot)
    }

    private mutating func removeHigh(_ slot: Int) {
        let word = slot / 64 - 1
        guard var words = high, word < words.count else { return }
        high = nil
        words[word] &= ~(1 << UInt64(slot % 64))
        high = words
    }

    /// Whether the two sets share a slot.
    func intersects(_ other: SlotSet) -> Bool {
        if low & other.low != 0 { return true }
        guard let a = high, let b = other.high else { return false }
        for i in 0..<Swift.min(a.count, b.count) where a[i] & b[i] != 0 { return true }
        return false
    }

    @inline(__always)
    static func == (lhs: SlotSet, rhs: SlotSet) -> Bool {
        guard lhs.low == rhs.low else { return false }
        if lhs.high == nil && rhs.high == nil { return true }
        return highEqual(lhs, rhs)
    }

    private static func highEqual(_ lhs: SlotSet, _ rhs: SlotSet) -> Bool {
        let a = lhs.high ?? [], b = rhs.high ?? []
        for i in 0..<Swift.max(a.count, b.count) where (i < a.count ? a[i] : 0) != (i < b.count ? b[i] : 0) { return false }
        return true
    }

    /// Consistent with `==`: words of zeros at the end of `high` (or no `high` at all) hash alike.
    func hash(into hasher: inout Hasher) {
        hasher.combine(low)
        guard let high, let last = high.lastIndex(where: { $0 != 0 }) else { return }
        for word in high[...last] { hasher.combine(word) }
    }

    struct Iterator: IteratorProtocol {
        private let set: SlotSet
        private var word = -1  // -1: the low word
        private var bits: UInt64

        fileprivate init(_ set: SlotSet) {
            self.set = set
            bits = set.low
        }

        mutating func next() -> Int? {
            while bits == 0 {
                word += 1
                guard let high = set.high, word < high.count else { return nil }
                bits = high[word]
            }
            let bit = bits.trailingZeroBitCount
            bits &= bits - 1
            return (word + 1) * 64 + bit
        }
    }

    func makeIterator() -> Iterator { Iterator(self) }

    var underestimatedCount: Int { count }
}
