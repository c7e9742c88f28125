import Foundation
import Testing
@testable import ObjectGraph

/// The coordinator's row cache (semantics §2.3) under concurrent use of one coordinator: a fetch (or a fault, a
/// conflict check, a smart merge's adoption) reads its rows on the coordinator's queue and puts them in the cache
/// after leaving it, so a save on the same coordinator can commit, and cache, a newer version in between.
@Suite struct RowCacheVersionTests {
    /// The two halves of a fetch of `id` on `coordinator`, as `fetchRows` runs them: the read on the coordinator's
    /// queue, then (later) the install in the row cache, whose reference the fetching context gives back.
    struct SplitFetch {
        let coordinator: PersistentStoreCoordinator
        let id: ManagedObjectID
        let row: RowSnapshot

        init(_ coordinator: PersistentStoreCoordinator, _ id: ManagedObjectID) throws {
            self.coordinator = coordinator
            self.id = id
            row = try #require(try coordinator.readStore { try $0.rows(of: id.entity, keys: [id.key]) }[id.key])
        }

        func install() {
            var fetched = [FetchEntry(id: id, row: row, retained: true)]
            coordinator.rowCache.installRetaining(&fetched)
            coordinator.rowCache.release(id)
        }
    }

    // Lost update (semantics §1.1, §1.5, §2.3): the stress test `nothingIsLostThatThePoliciesKeep` once stored a
    // note's editorMark two rounds behind the view context's last acknowledged save. The view context's own save
    // cached version 2; a temporary context's fetch on the same coordinator, whose read ran before that commit,
    // then put version 1 back. A merge refreshed the view's note from it, so its snapshot went back to version 1;
    // its next edit met the database's version 2 at layer 2 and StoreTrump (§1.5: E[p] wherever B[p] != E[p])
    // took "the store's" value for the very property the view had changed itself: the save was acknowledged and
    // wrote nothing. The cache only ever moves to newer versions of a row.
    @Test("Lost update: a row read before a save commits never replaces the saved row in the row cache (§1.1, §1.5, §2.3)")
    func lostUpdateRowCacheNeverGoesBack() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let view = stack.context(policy: .mergeByPropertyStoreTrump, name: "view")
        let item: Item = try mgLoad(view, id)
        // A temporary context's fetch reads the row at version 1 ...
        let fetch = try SplitFetch(stack.coordinator, id)
        #expect(fetch.row.version == 1)
        // ... the view saves version 2 (acknowledged) ...
        try view.performAndWait {
            item.price = 20
            try view.save()
        }
        // ... and the fetch's rows reach the cache after that.
        fetch.install()
        #expect(stack.coordinator.rowCache.version(of: id)?.version == 2, "the cache went back to the row read before the save")
        // An importer's save merged into the view refreshes the note (semantics §3.1): it shows the view's own save.
        try view.performAndWait {
            view.refresh(item, mergeChanges: true)
            #expect(item.price == 20)
            #expect(item.snapshotVersion == 2)
            item.price = 30
            try view.save()
        }
        let rows = try stack.sql("SELECT Z_OPT, ZPRICE FROM ZITEM")
        #expect(rows.count == 1)
        #expect(rows.first?[0].int64 == 3, "the acknowledged save wrote its row")
        #expect(rows.first.map { mgDouble($0[1]) } == 30, "the acknowledged price is stored")
    }

    // Lost update (semantics §1.1, §1.5): the path the stress test took most often. Without a refresh in between,
    // the view's next save met the older row at layer 1: a "row cache conflict" whose cached row was older than the
    // view's own snapshot. StoreTrump took that row's value for the property the view had just changed, then
    // layer 2 took the database's (the view's previous save): acknowledged, nothing written.
    @Test("Lost update: a layer-1 conflict never meets a row older than the one the saving context saved (§1.1, §1.5)")
    func lostUpdateLayerOneNeverMeetsAnOlderRow() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let view = stack.context(policy: .mergeByPropertyStoreTrump, name: "view")
        let item: Item = try mgLoad(view, id)
        let fetch = try SplitFetch(stack.coordinator, id)
        try view.performAndWait {
            item.price = 20
            try view.save()
        }
        fetch.install()
        let conflicts = stack.coordinator.counters.cacheConflicts
        try view.performAndWait {
            item.price = 30
            try view.save()
            #expect(item.price == 30)
        }
        #expect(stack.coordinator.counters.cacheConflicts == conflicts, "no row-cache conflict: nobody else wrote the row")
        let rows = try stack.sql("SELECT Z_OPT, ZPRICE FROM ZITEM")
        #expect(rows.first?[0].int64 == 3)
        #expect(rows.first.map { mgDouble($0[1]) } == 30, "the acknowledged price is stored")
    }

    // Lost update (semantics §1.1, §2.3): a row the cache forgot (invalidated, as a smart merge does when the other
    // coordinator stops caching it) is read again from the store, not replaced by an older row that a fetch read
    // before the forgetting save.
    @Test("Lost update: a forgotten row is not replaced by one older than the cache last held (§1.1, §2.3)")
    func lostUpdateForgottenRowStaysAtItsVersion() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let view = stack.context(policy: .mergeByPropertyStoreTrump, name: "view")
        let item: Item = try mgLoad(view, id)
        let fetch = try SplitFetch(stack.coordinator, id)
        try view.performAndWait {
            item.price = 20
            try view.save()
        }
        stack.coordinator.rowCache.invalidate([id])
        fetch.install()
        #expect(stack.coordinator.rowCache.version(of: id) == nil, "the forgotten row took an older one")
        try view.performAndWait {
            view.refresh(item, mergeChanges: true)
            #expect(item.price == 20)
            #expect(item.snapshotVersion == 2)
            item.price = 30
            try view.save()
        }
        let rows = try stack.sql("SELECT Z_OPT, ZPRICE FROM ZITEM")
        #expect(rows.first?[0].int64 == 3)
        #expect(rows.first.map { mgDouble($0[1]) } == 30, "the acknowledged price is stored")
    }
}

/// Read connections beside the writer, behaviour doc §8: an object's deinit gives its row's
/// reference back (semantics §2.3, snapshot reference counting). While a long hold has the row cache's table (a
/// large save's install), that reference waits for the next hold instead of the deallocating thread waiting for the
/// lock; no one sees the table without it.
@Suite struct RowCacheDeferredReleaseTests {
    static func row(_ key: Int64, version: Int64 = 1) -> RowSnapshot {
        RowSnapshot(values: [], version: version)
    }

    @Test("A reference given back while the table is held is applied by the next hold, before anything is read (§2.3)")
    func releaseDuringAHoldIsAppliedFirstByTheNextHold() throws {
        let cache = RowCache()
        let entity = try #require(try TestStack().model.entity(named: "Item"))
        let kept = ManagedObjectID(entity: entity, primaryKey: 1, storeNumber: 1)
        let letGo = ManagedObjectID(entity: entity, primaryKey: 2, storeNumber: 1)
        cache.install([(kept, Self.row(1)), (letGo, Self.row(2))], retain: true)
        #expect(cache.count == 2)
        cache.holdingTableForTesting {
            // The lock is taken: the release does not wait for it (it would never get it on this thread).
            cache.release(letGo)
        }
        // The next look at the table applies it first: the entry went with its last reference.
        #expect(cache.count == 1)
        #expect(cache.version(of: letGo) == nil)
        #expect(cache.version(of: kept)?.version == 1)
        // A reference given back with the lock free is applied at once, as before.
        cache.release(kept)
        #expect(cache.count == 0)
    }

    @Test("References given back during a hold and taken again after it count in order: the entry stays (§2.3)")
    func releaseThenRetainAcrossAHoldKeepsTheEntry() throws {
        let cache = RowCache()
        let entity = try #require(try TestStack().model.entity(named: "Item"))
        let id = ManagedObjectID(entity: entity, primaryKey: 7, storeNumber: 1)
        cache.install([(id, Self.row(7, version: 3))], retain: true)
        cache.retain(id)
        cache.holdingTableForTesting { cache.release(id) }
        cache.retain(id)
        cache.release(id)
        // Two references were taken, one more, and two given back: one is left, with its row.
        #expect(cache.version(of: id)?.version == 3)
        cache.release(id)
        #expect(cache.count == 0)
    }

    @Test("Deinit releases beside a long install on another thread: every reference counts once, none is lost (§2.3)")
    func releasesBesideALongInstallAllCount() async throws {
        let cache = RowCache()
        let entity = try #require(try TestStack().model.entity(named: "Item"))
        let saved = (1...20_000).map { ManagedObjectID(entity: entity, primaryKey: Int64($0), storeNumber: 1) }
        let fetched = (1...64).map { ManagedObjectID(entity: entity, primaryKey: Int64(100_000 + $0), storeNumber: 1) }
        // The fetched rows are held once before, so that their entries live through the run.
        cache.install(fetched.map { ($0, Self.row(1)) }, retain: true)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // A large save's install (many holds), then its references given back in batches.
                cache.install(saved.map { ($0, Self.row(1)) }, retain: true)
                cache.release(saved)
            }
            group.addTask {
                // A context beside it: a fetch's references taken, then given back one by one as objects go.
                for _ in 0..<200 {
                    var entries = fetched.map { FetchEntry(id: $0, row: Self.row(1), retained: true) }
                    cache.installRetaining(&entries)
                    for id in fetched { cache.release(id) }
                }
            }
        }
        #expect(cache.count == fetched.count)
        for id in fetched { cache.release(id) }
        #expect(cache.count == 0)
    }
}
