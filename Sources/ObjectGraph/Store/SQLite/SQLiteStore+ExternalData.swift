import Foundation

// External binary storage in the SQLite store (Docs/coredata-behaviour.md §13.5): what a save writes to files and
// columns, which files it leaves unreferenced, and the files no row refers to when the store opens.
extension SQLiteStore {
    /// `request` with the values of attributes that allow external storage as their columns keep them: large ones
    /// written to files (recorded in `changes.written`); the files of the values its updates replace and its deletes
    /// remove recorded in `changes.replaced`. Runs inside the save's transaction.
    func externalized(_ request: SaveRequest, _ externalData: SQLiteExternalData, _ changes: inout SQLiteExternalData.Changes) throws -> SaveRequest {
        var request = request
        for i in request.inserts.indices {
            for slot in request.inserts[i].id.entity.externalStorageSlots where slot < request.inserts[i].values.count {
                request.inserts[i].values[slot] = try externalData.rowValue(request.inserts[i].values[slot], changes: &changes)
            }
        }
        for i in request.updates.indices {
            let update = request.updates[i]
            let slots = update.id.entity.externalStorageSlots.filter { update.changedSlots.contains($0) }
            if slots.isEmpty { continue }
            changes.replaced += try externalFileNames(of: update.id, slots: slots)
            for slot in slots {
                request.updates[i].values[slot] = try externalData.rowValue(update.values[slot], changes: &changes)
            }
        }
        for delete in request.deletes where !delete.id.entity.externalStorageSlots.isEmpty {
            changes.replaced += try externalFileNames(of: delete.id, slots: delete.id.entity.externalStorageSlots)
        }
        return request
    }

    /// The files the stored row of `id` refers to from `slots`.
    func externalFileNames(of id: ManagedObjectID, slots: [Int]) throws -> [String] {
        let entity = id.entity
        let columns = slots.map { entity.columnName(forSlot: $0) }.joined(separator: ", ")
        let statement = try connection.cachedStatement("SELECT \(columns) FROM \(entity.tableName) WHERE Z_PK = ?")
        statement.bindInt(id.key, at: 1)
        var names: [String] = []
        while try statement.step() {
            for column in slots.indices where !statement.isNull(at: column) {
                if let name = SQLiteExternalData.fileName(ofColumn: statement.data(at: column)) { names.append(name) }
            }
        }
        return names
    }

    /// Removes the files no row refers to, holding the write lock: a save of another connection writes its files
    /// while it holds the lock, so no file of a save still running is taken for an orphan.
    static func removeOrphanFiles(_ externalData: SQLiteExternalData, _ connection: SQLiteConnection, model: ManagedObjectModel) throws {
        guard FileManager.default.fileExists(atPath: externalData.directory.path) else { return }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            var referenced = Set<String>()
            for entity in model.entities {
                for slot in entity.externalStorageSlots {
                    let column = entity.columnName(forSlot: slot)
                    for row in try connection.query("SELECT \(column) FROM \(entity.tableName) WHERE substr(\(column), 1, 1) = X'02'") {
                        if case .blob(let bytes)? = row.first, let name = SQLiteExternalData.fileName(ofColumn: bytes) { referenced.insert(name) }
                    }
                }
            }
            externalData.removeOrphans(referenced: referenced)
            try connection.execute("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }
}
