import Foundation

/// An error of the object graph, with Core Data's codes (`NSCocoaErrorDomain`) and the place it concerns.
public struct ObjectGraphError: Error, CustomStringConvertible, @unchecked Sendable {  // conflicts hold objects; read them on the context's queue
    /// Core Data's error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// `NSManagedObjectValidationError`: a generic validation failure, or a value of the wrong type.
        public static let validation = Code(rawValue: 1550)
        /// `NSManagedObjectConstraintValidationError`.
        public static let constraintValidation = Code(rawValue: 1551)
        /// `NSValidationMultipleErrorsError`: several validation errors, in ``ObjectGraphError/detailedErrors``.
        public static let multipleErrors = Code(rawValue: 1560)
        /// `NSValidationMissingMandatoryPropertyError`.
        public static let missingMandatoryProperty = Code(rawValue: 1570)
        /// `NSValidationRelationshipLacksMinimumCountError`.
        public static let relationshipLacksMinimumCount = Code(rawValue: 1580)
        /// `NSValidationRelationshipExceedsMaximumCountError`.
        public static let relationshipExceedsMaximumCount = Code(rawValue: 1590)
        /// `NSValidationRelationshipDeniedDeleteError`.
        public static let relationshipDeniedDelete = Code(rawValue: 1600)
        /// `NSValidationNumberTooLargeError`.
        public static let numberTooLarge = Code(rawValue: 1610)
        /// `NSValidationNumberTooSmallError`.
        public static let numberTooSmall = Code(rawValue: 1620)
        /// `NSValidationDateTooLateError`.
        public static let dateTooLate = Code(rawValue: 1630)
        /// `NSValidationDateTooSoonError`.
        public static let dateTooSoon = Code(rawValue: 1640)
        /// `NSValidationStringTooLongError`.
        public static let stringTooLong = Code(rawValue: 1660)
        /// `NSValidationStringTooShortError`.
        public static let stringTooShort = Code(rawValue: 1670)
        /// `NSValidationStringPatternMatchingError`: a string that does not match its attribute's pattern whole.
        public static let stringPatternMatching = Code(rawValue: 1680)
        /// `NSManagedObjectReferentialIntegrityError`: a fault whose row is gone.
        public static let referentialIntegrity = Code(rawValue: 133000)
        /// `NSManagedObjectExternalRelationshipError`: an object related across contexts or stores.
        public static let externalRelationship = Code(rawValue: 133010)
        /// `NSManagedObjectMergeError`: optimistic-locking conflicts the merge policy did not resolve.
        public static let merge = Code(rawValue: 133020)
        /// `NSManagedObjectConstraintMergeError`: uniqueness conflicts the merge policy did not resolve.
        public static let constraintMerge = Code(rawValue: 133021)
        /// `NSPersistentStoreInvalidTypeError`: not a store of this kind (for example not an SQLite file).
        public static let persistentStoreInvalidType = Code(rawValue: 134000)
        /// `NSPersistentStoreIncompatibleSchemaError`.
        public static let persistentStoreIncompatibleSchema = Code(rawValue: 134020)
        /// `NSPersistentStoreSaveError`.
        public static let persistentStoreSave = Code(rawValue: 134030)
        /// `NSPersistentStoreSaveConflictsError`. Defined for code that matches on it, and never raised: nothing
        /// recorded shows where Core Data raises it; optimistic-locking conflicts a policy does not resolve are
        /// ``merge`` (133020), as Core Data reports them.
        public static let persistentStoreSaveConflicts = Code(rawValue: 134050)
        /// `NSPersistentHistoryTokenExpiredError`: history after the token was purged.
        public static let persistentHistoryTokenExpired = Code(rawValue: 134301)
        /// `NSPersistentStoreOperationError`.
        public static let persistentStoreOperation = Code(rawValue: 134070)
        /// `NSPersistentStoreOpenError`.
        public static let persistentStoreOpen = Code(rawValue: 134080)
        /// `NSPersistentStoreTimeoutError`: the store stayed locked past the busy timeout.
        public static let persistentStoreTimeout = Code(rawValue: 134090)
        /// `NSPersistentStoreIncompatibleVersionHashError`: the store was made with another model.
        public static let persistentStoreIncompatibleVersionHash = Code(rawValue: 134100)
        /// `NSMigrationError`: a migration failed (the store is left as it was).
        public static let migration = Code(rawValue: 134110)
        /// `NSMigrationMissingMappingModelError`: no mapping model (none given, and none can be inferred).
        public static let migrationMissingMappingModel = Code(rawValue: 134140)
        /// `NSSQLiteError`: any other SQLite failure.
        public static let sqlite = Code(rawValue: 134180)
        /// A fetch request or predicate that cannot run (unknown key, wrong entity, bad argument).
        public static let invalidFetchRequest = Code(rawValue: 134060)

        public var description: String { String(rawValue) }
    }

    /// The error's code.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The entity concerned, if any.
    public var entityName: String?
    /// The object concerned, if any.
    public var objectID: ManagedObjectID?
    /// The property concerned, if any.
    public var propertyName: String?
    /// The store file concerned, if any.
    public var storePath: String?
    /// For ``Code/multipleErrors``: every error.
    public var detailedErrors: [ObjectGraphError] = []
    /// For ``Code/merge``: Core Data's `conflictList` of optimistic-locking conflicts.
    public var conflictList: [MergeConflict] = []
    /// For ``Code/constraintMerge``: Core Data's `conflictList` of uniqueness conflicts.
    public var constraintConflictList: [ConstraintConflict] = []

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, entity: String? = nil, objectID: ManagedObjectID? = nil,
        property: String? = nil, storePath: String? = nil
    ) {
        self.code = code
        self.message = message
        self.entityName = entity
        self.objectID = objectID
        self.propertyName = property
        self.storePath = storePath
    }

    public var description: String {
        var place: [String] = []
        if let entityName { place.append("entity \(entityName)") }
        if let objectID { place.append("object \(objectID)") }
        if let propertyName { place.append("property \(propertyName)") }
        if let storePath { place.append("store \(storePath)") }
        var text = "error \(code.rawValue): \(message)"
        if !place.isEmpty { text += " (" + place.joined(separator: ", ") + ")" }
        for detail in detailedErrors { text += "\n  - \(detail)" }
        for conflict in conflictList { text += "\n  - \(conflict)" }
        for conflict in constraintConflictList { text += "\n  - \(conflict)" }
        return text
    }
}
