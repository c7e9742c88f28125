import Foundation

extension ManagedObject {
    /// Checks the model's constraints on every property (semantics §2.1 step 3): mandatory values, number and
    /// date ranges, string and data lengths, string patterns, to-many counts. Several failures become one 1560 error.
    func validatePropertyConstraints() throws {
        try materialize()
        // The usual case, rules that only ask for a value, all present: nothing to build or report.
        if entity.constraintsAskOnlyPresence, entity.constrainedSlots.allSatisfy({ !values[$0].isNull }) { return }
        var errors: [ObjectGraphError] = []
        func fail(_ code: ObjectGraphError.Code, _ property: String, _ message: String) {
            errors.append(ObjectGraphError(code, message, entity: entity.name, objectID: objectID, property: property))
        }
        // Only the slots with a rule: an optional attribute without ranges or lengths accepts every value.
        for slot in entity.constrainedSlots {
            let value = values[slot]
            switch entity.slots[slot] {
            case .attribute(let a):
                if value.isNull {
                    if !a.isOptional { fail(.missingMandatoryProperty, a.name, "\(a.name) is a required value") }
                    continue
                }
                if a.type == .date, case .date(let d) = value {
                    let t = d.timeIntervalSinceReferenceDate
                    if let min = a.minValue, t < min { fail(.dateTooSoon, a.name, "\(a.name) is earlier than the earliest allowed date") }
                    if let max = a.maxValue, t > max { fail(.dateTooLate, a.name, "\(a.name) is later than the latest allowed date") }
                } else if a.type.isNumeric, let n = value.numericValue {
                    if let min = a.minValue, n < min { fail(.numberTooSmall, a.name, "\(a.name) is \(value), less than the minimum \(min)") }
                    if let max = a.maxValue, n > max { fail(.numberTooLarge, a.name, "\(a.name) is \(value), more than the maximum \(max)") }
                }
                var length: Int?
                if case .string(let str) = value { length = str.count }
                if case .data(let data) = value { length = data.count }
                if let length {
                    if let min = a.minLength, length < min { fail(.stringTooShort, a.name, "\(a.name) is \(length) long, shorter than \(min)") }
                    if let max = a.maxLength, length > max { fail(.stringTooLong, a.name, "\(a.name) is \(length) long, longer than \(max)") }
                }
                // §13.7: the whole string must match, as a predicate's MATCHES does.
                if case .string(let str) = value, !entity.slotPatterns.isEmpty, let pattern = entity.slotPatterns[slot] {
                    if pattern.firstMatch(in: str, range: NSRange(str.startIndex..., in: str)) == nil {
                        fail(.stringPatternMatching, a.name, "\(a.name) is \(value), which does not match the pattern \(a.regularExpression ?? "")")
                    }
                }
            case .toOne(let r):
                if value.isNull, !r.isOptional { fail(.missingMandatoryProperty, r.name, "\(r.name) is a required relationship") }
            }
        }
        for index in entity.constrainedToManys {
            let r = entity.toManyRelationships[index]
            let count = try relatedIDs(index).count
            if !r.isOptional, count == 0 { fail(.missingMandatoryProperty, r.name, "\(r.name) is a required relationship") }
            if r.minCount > 0, count < r.minCount { fail(.relationshipLacksMinimumCount, r.name, "\(r.name) has \(count) objects, fewer than \(r.minCount)") }
            if r.maxCount > 0, count > r.maxCount { fail(.relationshipExceedsMaximumCount, r.name, "\(r.name) has \(count) objects, more than \(r.maxCount)") }
        }
        try Self.throwCombined(errors)
    }

    /// Refuses the delete while a `deny` relationship still has destinations (1600).
    func validateDenyRules() throws {
        var errors: [ObjectGraphError] = []
        for r in entity.relationships where r.deleteRule == .deny {
            let hasDestination: Bool
            switch ref(r.name) {
            case .toOne(let slot)?:
                try materialize()
                hasDestination = !values[slot].isNull
            case .toMany(let index)?:
                hasDestination = try !relatedIDs(index).isEmpty
            default: hasDestination = false
            }
            if hasDestination {
                errors.append(ObjectGraphError(.relationshipDeniedDelete, "\(r.name) is not empty and its delete rule is deny",
                                               entity: entity.name, objectID: objectID, property: r.name))
            }
        }
        try Self.throwCombined(errors)
    }

    static func throwCombined(_ errors: [ObjectGraphError]) throws {
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            var combined = ObjectGraphError(.multipleErrors, "multiple validation errors occurred")
            combined.detailedErrors = errors
            throw combined
        }
    }
}
