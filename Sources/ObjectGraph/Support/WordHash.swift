/// The hash of one machine word for the hash tables on hot paths (the registry, the change sets, the row cache,
/// uniqueness keys).
///
/// The standard library hashes an `Int` with SipHash-1-3 (about 30 instructions and a call per hash), which
/// protects tables keyed by untrusted input from collision flooding. Object IDs and object addresses are not
/// untrusted input (primary keys are assigned by the store, addresses by the allocator), and an update of one
/// object hashes an ID or an object about fifty times. This is MurmurHash3's
/// 64-bit finalizer over the word mixed with the table's seed: every bit of the input reaches the low bits that a
/// `Set` or `Dictionary` uses as its bucket, so sequential keys and 16-byte-aligned addresses spread as well as
/// with SipHash. The per-table seed is kept, so tables of different sizes still order their elements
/// differently (what keeps copying one into another linear).
@inline(__always)
func wordHash(_ word: UInt64, seed: Int) -> Int {
    var x = word ^ UInt64(bitPattern: Int64(seed))
    x ^= x >> 33
    x &*= 0xff51_afd7_ed55_8ccd
    x ^= x >> 33
    x &*= 0xc4ce_b9fe_1a85_ec53
    x ^= x >> 33
    return Int(bitPattern: UInt(x))
}
