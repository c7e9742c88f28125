import ObjectGraph

extension ObjectSortDescriptor {
    /// A sort key as scenarios and traces write it: `key` ascending, `-key` descending.
    init(scenarioKey key: String) {
        self = key.hasPrefix("-") ? ObjectSortDescriptor(String(key.dropFirst()), ascending: false) : ObjectSortDescriptor(key)
    }
}

extension ViewerRequest {
    /// The fetch request this scenario request stands for, on `entityName`, sorted by `defaultSort` when it names
    /// no sort. Sections group by the first sort key (Docs/coredata-behaviour.md §5): a section key not already
    /// first sorts first. The loader has checked the predicate and the keys.
    func fetchRequest(entityName: String, defaultSort: [String]) throws -> FetchRequest {
        var sort = (sort.isEmpty ? defaultSort : sort).map(ObjectSortDescriptor.init(scenarioKey:))
        if let section = sectionKey, sort.first?.key != section { sort.insert(ObjectSortDescriptor(section), at: 0) }
        var request = FetchRequest(entityName: entityName, predicate: try predicate.map { try ObjectPredicate(format: $0) }, sortDescriptors: sort)
        request.fetchLimit = fetchLimit
        request.fetchBatchSize = fetchBatchSize
        return request
    }
}
