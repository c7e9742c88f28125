import Foundation
import Synchronization

/// Identifies an object across contexts (`NSManagedObjectID`).
///
/// An inserted object has a temporary ID until its root context saves; then it gets a permanent ID built from
/// the store's identifier and the row's primary key (`Z_PK`). Two coordinators on the same store file mint
/// equal IDs for the same row, so IDs pass freely between them (merges, `existingObject(with:)`). An ID also
/// remembers which coordinator minted it, outside equality: a history predicate compares it with the history's
/// own IDs only when its coordinator runs the fetch (Docs/coredata-behaviour.md §3.6).
public struct ManagedObjectID: Hashable, Sendable {
    /// The entity of the object.
    public var entity: EntityDescription { storedEntity }
    // Not reference counted: entity descriptions live as long as the process (``EntityDescription/init``
    // keeps every one), and IDs are copied constantly, on every queue: counting references to the one entity
    // object from the saving queue, the main queue and the queue that frees a merge's ID sets made its
    // reference count a cache line bouncing between cores.
    private unowned(unsafe) let storedEntity: EntityDescription
    /// The primary key for a permanent ID; a process-unique number for a temporary one.
    let key: Int64
    /// The interned store identifier in the low ``StoreRegistry/tagShift`` bits (0 for temporary IDs), the
    /// minting coordinator's tag above them. In the padding after `key`, so an ID stays 20 bytes.
    private let storeWord: UInt32

    /// - Parameter storeNumber: the minting store's ``PersistentStore/storeNumber`` (its identifier's number with
    ///   its coordinator's tag), or 0 for a temporary ID.
    init(entity: EntityDescription, primaryKey: Int64, storeNumber: UInt32) {
        self.storedEntity = entity
        self.key = primaryKey
        self.storeWord = storeNumber
    }

    /// Interned store identifier; 0 for temporary IDs.
    var storeNumber: UInt32 { storeWord & StoreRegistry.numberMask }

    /// The tag of the coordinator that minted this ID (``PersistentStoreCoordinator/idTag``).
    var coordinatorTag: UInt32 { storeWord >> StoreRegistry.tagShift }

    /// This ID as coordinator `tag` mints it (equal to this one); a temporary ID is returned as it is.
    func minted(byCoordinatorTag tag: UInt32) -> ManagedObjectID {
        isTemporaryID ? self : ManagedObjectID(entity: storedEntity, primaryKey: key, storeNumber: storeNumber | tag << StoreRegistry.tagShift)
    }

    static func temporary(_ entity: EntityDescription) -> ManagedObjectID {
        ManagedObjectID(entity: entity, primaryKey: temporaryCounter.add(1, ordering: .relaxed).newValue, storeNumber: 0)
    }

    private static let temporaryCounter = Atomic<Int64>(0)

    /// Whether this ID is temporary (the object has not reached a store yet).
    public var isTemporaryID: Bool { storeNumber == 0 }

    /// The row's primary key (`Z_PK`), nil for a temporary ID.
    package var primaryKey: Int64? { isTemporaryID ? nil : key }

    /// The identifier of the store that holds the row, nil for a temporary ID.
    public var storeIdentifier: String? { isTemporaryID ? nil : StoreRegistry.identifier(for: storeNumber) }

    /// A URI that names the object: `x-coredata://<store>/<Entity>/p<pk>` (or `x-coredata:///<Entity>/t<n>`).
    public var uriRepresentation: URL {
        if isTemporaryID {
            return URL(string: "x-coredata:///\(entity.name)/t\(key)")!
        }
        return URL(string: "x-coredata://\(storeIdentifier ?? "")/\(entity.name)/p\(key)")!
    }

    public static func == (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        lhs.key == rhs.key && (lhs.storeWord ^ rhs.storeWord) & StoreRegistry.numberMask == 0
            && (lhs.storedEntity === rhs.storedEntity || lhs.entity.name == rhs.entity.name)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashWord)
    }

    // IDs are hashed on every registry lookup, set insert and row-cache access: one word through a short mixer
    // (``wordHash(_:seed:)``) instead of a `Hasher` run.
    //
    // Why each key is hashed on its own: hashing the key's block of 16 into one group of 16 buckets keeps keys
    // walked in order near each other in a table (a 1M-object fetch is 25 % faster), but linear probing then
    // forms clusters 16 times as long: deleting keys in order (a chunk's objects going, a save's references given
    // back) costs 6 times as much in a table of 20k IDs and 2.4 times in one of 3M, and the 10k import runs 11 %
    // more instructions (Benchmarks/LOG.md).
    public func _rawHashValue(seed: Int) -> Int {
        wordHash(hashWord, seed: seed)
    }

    /// The key and the store in one word (equal IDs give equal words; the entity is left to `==`).
    var hashWord: UInt64 { UInt64(bitPattern: key) ^ (UInt64(storeNumber) << 44) }
}

extension ManagedObjectID: CustomStringConvertible {
    public var description: String { uriRepresentation.absoluteString }
}

/// Interns store identifiers (UUID strings) as small numbers so that IDs hash and compare cheaply.
enum StoreRegistry {
    /// Store numbers take the low 20 bits of an ID's store word; coordinator tags the 12 above.
    static let tagShift: UInt32 = 20
    static let numberMask: UInt32 = 1 << tagShift - 1
    static let tagMask: UInt32 = UInt32.max >> tagShift
    private static let table = Mutex<(numbers: [String: UInt32], identifiers: [String])>(([:], []))

    static func number(for identifier: String) -> UInt32 {
        table.withLock { t in
            if let n = t.numbers[identifier] { return n }
            t.identifiers.append(identifier)
            let n = UInt32(t.identifiers.count)
            precondition(n <= numberMask, "more than \(numberMask) store identifiers in one process")
            t.numbers[identifier] = n
            return n
        }
    }

    static func identifier(for number: UInt32) -> String? {
        table.withLock { t in number > 0 && Int(number) <= t.identifiers.count ? t.identifiers[Int(number) - 1] : nil }
    }
}
