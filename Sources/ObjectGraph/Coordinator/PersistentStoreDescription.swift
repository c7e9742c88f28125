import Foundation

/// How to open a store (`NSPersistentStoreDescription`), with Core Data's defaults: added
/// synchronously on the calling thread, read-write, and a store made with one of the model's previous versions
/// migrated automatically with an inferred mapping.
///
/// ```swift
/// var description = PersistentStoreDescription(url: storeURL)
/// description.setOption(true, forKey: PersistentStoreDescription.persistentHistoryTrackingKey)
/// try coordinator.addPersistentStore(with: description)
/// ```
public struct PersistentStoreDescription: Sendable, Hashable {
    /// `NSPersistentHistoryTrackingKey`.
    public static let persistentHistoryTrackingKey = "NSPersistentHistoryTrackingKey"
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`.
    public static let remoteChangeNotificationPostOptionKey = "NSPersistentStoreRemoteChangeNotificationPostOptionKey"
    /// `NSReadOnlyPersistentStoreOption`.
    public static let readOnlyOptionKey = "NSReadOnlyPersistentStoreOption"
    /// `NSMigratePersistentStoresAutomaticallyOption`.
    public static let migrateAutomaticallyOptionKey = "NSMigratePersistentStoresAutomaticallyOption"
    /// `NSInferMappingModelAutomaticallyOption`.
    public static let inferMappingModelOptionKey = "NSInferMappingModelAutomaticallyOption"
    /// `NSPersistentStoreConnectionPoolMaxSizeKey` (a number: ``StoreOptions/connectionPoolMaxSize``).
    public static let connectionPoolMaxSizeKey = "NSPersistentStoreConnectionPoolMaxSizeKey"

    /// SQLite (the default, as Core Data's) or in-memory.
    public var type: PersistentStoreType = .sqlite
    /// The store file (nil for in-memory).
    public var url: URL?
    /// The model configuration whose entities the store holds; nil for every entity (`configuration`, Core Data's
    /// `Default`; Docs/coredata-behaviour.md §14.2).
    public var configuration: String?
    /// What the store is opened with: pragmas, busy timeout, read-only, history, remote-change notifications.
    public var storeOptions = StoreOptions()
    /// Add the store on a background queue and report through the completion handler (default false).
    public var shouldAddStoreAsynchronously = false
    /// Migrate a store made with another version of the model when it is opened (default true).
    public var shouldMigrateStoreAutomatically = true
    /// Infer the mapping of such a migration (default true).
    public var shouldInferMappingModelAutomatically = true
    /// Options set with ``setOption(_:forKey:)`` under keys this library does not use, kept as given (Core Data
    /// ignores keys it does not know too).
    public private(set) var otherOptions: [String: String] = [:]

    /// A description of an SQLite store at `url`.
    public init(url: URL? = nil) { self.url = url }

    /// `isReadOnly` (default false).
    public var isReadOnly: Bool {
        get { storeOptions.readOnly }
        set { storeOptions.readOnly = newValue }
    }

    /// The connection's busy timeout in seconds (`timeout`).
    public var timeout: TimeInterval {
        get { storeOptions.busyTimeout }
        set { storeOptions.busyTimeout = newValue }
    }

    /// SQLite pragmas (`sqlitePragmas`).
    public var sqlitePragmas: [String: String] { storeOptions.pragmas }

    /// Sets a pragma, nil removes it (`setValue(_:forPragmaNamed:)`).
    public mutating func setValue(_ value: String?, forPragmaNamed name: String) { storeOptions.pragmas[name] = value }

    /// The options Core Data spells as keys (`options`): the known ones as the flags they set, others kept.
    public var options: [String: String] {
        var all = otherOptions
        all[Self.persistentHistoryTrackingKey] = String(storeOptions.persistentHistoryTracking)
        all[Self.remoteChangeNotificationPostOptionKey] = String(storeOptions.remoteChangeNotifications)
        all[Self.readOnlyOptionKey] = String(storeOptions.readOnly)
        all[Self.migrateAutomaticallyOptionKey] = String(shouldMigrateStoreAutomatically)
        all[Self.inferMappingModelOptionKey] = String(shouldInferMappingModelAutomatically)
        if let size = storeOptions.connectionPoolMaxSize { all[Self.connectionPoolMaxSizeKey] = String(size) }
        return all
    }

    /// Sets an option by Core Data's key (`setOption(_:forKey:)`).
    public mutating func setOption(_ value: Bool, forKey key: String) {
        switch key {
        case Self.persistentHistoryTrackingKey: storeOptions.persistentHistoryTracking = value
        case Self.remoteChangeNotificationPostOptionKey: storeOptions.remoteChangeNotifications = value
        case Self.readOnlyOptionKey: storeOptions.readOnly = value
        case Self.migrateAutomaticallyOptionKey: shouldMigrateStoreAutomatically = value
        case Self.inferMappingModelOptionKey: shouldInferMappingModelAutomatically = value
        default: otherOptions[key] = String(value)
        }
    }

    /// Sets a number option by Core Data's key (`setOption(_:forKey:)` with an `NSNumber`):
    /// ``connectionPoolMaxSizeKey`` sets ``StoreOptions/connectionPoolMaxSize``; other keys are kept as given.
    public mutating func setOption(_ value: Int, forKey key: String) {
        switch key {
        case Self.connectionPoolMaxSizeKey: storeOptions.connectionPoolMaxSize = value
        default: otherOptions[key] = String(value)
        }
    }
}

extension PersistentStoreCoordinator {
    /// Adds the store `description` describes, on the calling thread (`addPersistentStore(with:)` with
    /// `shouldAddStoreAsynchronously` false). Its migration flags become the store options' (a store made with a
    /// previous version of the model is migrated when both are true; 134140 without inference; 134100 for a
    /// store no version of the model made).
    public func addPersistentStore(with description: PersistentStoreDescription) throws {
        var options = description.storeOptions
        options.migrateAutomatically = description.shouldMigrateStoreAutomatically
        options.inferMappingModel = description.shouldInferMappingModelAutomatically
        try addPersistentStore(type: description.type, configuration: description.configuration, at: description.url, options: options)
    }

    /// Adds the store and reports through `completionHandler`: on the calling thread before returning, or with
    /// `shouldAddStoreAsynchronously` on a background queue (Core Data's `addPersistentStore(with:completionHandler:)`).
    /// The background queue is a ``ContextQueue`` of its own: a dispatch queue in real mode, a queue of the
    /// simulation (run on its virtual clock) when called on a simulated thread.
    public func addPersistentStore(with description: PersistentStoreDescription,
                                   completionHandler: @escaping @Sendable (PersistentStoreDescription, (any Error)?) -> Void) {
        let add: @Sendable () -> Void = {
            do {
                try self.addPersistentStore(with: description)
                completionHandler(description, nil)
            } catch {
                completionHandler(description, error)
            }
        }
        if description.shouldAddStoreAsynchronously {
            ContextQueue(label: "ObjectGraph.coordinator.\(name).addStore").async(add)
        } else {
            add()
        }
    }
}
