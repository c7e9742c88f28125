import ObjectGraph
import Synchronization
import Workbench

/// An app's own merge policy: a price a user typed wins over the store's; everything else goes as StoreTrump.
/// It counts the conflicts it settled, so a run can say how often it mattered.
public final class PriceKeepingPolicy: MergePolicy, @unchecked Sendable {  // the counter is a Mutex
    public static let conflictsSettled = Mutex(0)

    public override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        Self.conflictsSettled.withLock { $0 += conflicts.count }
        // The typed prices survive StoreTrump's property-by-property merge.
        let kept = conflicts.compactMap { conflict -> (ManagedObject, Any?)? in
            let object = conflict.sourceObject
            guard object.changedValues()["price"] != nil else { return nil }
            return (object, object.value(forKey: "price"))
        }
        try super.resolve(optimisticLockingConflicts: conflicts)
        for (object, price) in kept { try object.setValue(price, forKey: "price") }
    }
}

/// The shop's model: products with a unique integer id, a name and a price.
public let shopModel = ModelFile(entities: [
    ModelFile.Entity(
        name: "Product",
        attributes: [
            ModelFile.Attribute(name: "id", type: .integer64, optional: false, defaultValue: .number(0)),
            ModelFile.Attribute(name: "name", type: .string),
            ModelFile.Attribute(name: "price", type: .double, optional: false, defaultValue: .number(0)),
        ],
        uniquenessConstraints: [["id"]]),
])

/// Registers the policy as `keepPrices` and the model as `shop`, for scenarios to name.
public func registerShop() {
    Registry.registerPolicy("keepPrices") { rule in PriceKeepingPolicy(type: .mergeByPropertyStoreTrump, deletedElsewhere: rule) }
    Registry.registerModel("shop", shopModel)
}

/// A scenario that uses both: imports update products while an editor changes prices in the view context.
public let shopScenario = """
    name: shop-prices
    description: Imports update products while an editor types prices; the view context keeps typed prices.
    seed: 3
    model: { name: shop, fields: [price] }
    stack:
      topology: ambar
      mergePolicy: keepPrices
    phases:
      - name: seed
        actors:
          - importer: { objects: 200, chunkSize: 100 }
      - name: run
        duration: 500ms
        actors:
          - viewer: { visibleObjects: 10 }
          - editor: { rate: 20/s, edits: 3 }
          - importer: { objects: 400, chunkSize: 50, updateFraction: 0.8, distribution: hotspot }
      - name: verify
    """
