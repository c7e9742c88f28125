import Foundation
import ModelSchema

/// Reads one version's `contents` file (the XML Xcode writes for a `.xcdatamodel`) into entities and configurations.
///
/// Docs/coredata-behaviour.md §15.2 says what each element and attribute becomes, §15.3 what is left out and why.
/// A field keeps the model file's default (nil) where Xcode's value says the same: an attribute or relationship
/// is optional only with `optional="YES"` (Xcode writes nothing for a required one), so `optional` is nil for an
/// optional one and false for a required one; flags are set only when `YES`; a delete rule of Nullify and an
/// ascending index element are nil.
struct ContentsReader {
    /// The `contents` file, for errors and the listing.
    let path: String
    /// The version's name (empty for a single version), for the line index.
    let version: String
    private(set) var skipped: [XcodeModelReading.Skipped] = []
    private(set) var lines: [XcodeModelReading.Place: Int] = [:]

    init(path: String, version: String) { (self.path, self.version) = (path, version) }

    /// The entities and configurations of `root`, the file's `<model>` element.
    mutating func read(_ root: XMLNode) throws -> (entities: [ModelFile.Entity], configurations: [ModelFile.Configuration]?) {
        guard root.name == "model" else {
            throw XcodeModelError(path: path, line: root.line, "the root element is <\(root.name)>, not Xcode's <model>")
        }
        var entities: [ModelFile.Entity] = []
        var configurations: [ModelFile.Configuration] = []
        for node in root.children {
            switch node.name {
            case "entity": entities.append(try entity(node))
            case "configuration":  // `usedWithCloudKit` concerns CloudKit only
                configurations.append(ModelFile.Configuration(name: try required("name", of: node), entities: node.children(named: "memberEntity").compactMap { $0["name"] }))
            case "elements": continue  // the diagram's layout
            case "fetchRequest":
                skip(node, "a fetch request template is a stored fetch request an app asks for by name; the store and every save are the same without it")
            case "composite":
                skip(node, "a composite attribute type is not modelled; an attribute of this type fails the load unless it is transient")
            case "userInfo":
                skip(node, "user info is the app's own data; nothing in the store depends on it")
            default:
                skip(node, "an element this reader does not know; the model is read without it")
            }
        }
        for (index, configuration) in configurations.enumerated() {
            for name in configuration.entities where !entities.contains(where: { $0.name == name }) {
                let line = root.children(named: "configuration")[index].line
                throw XcodeModelError(path: path, line: line, "configuration '\(configuration.name)' names entity '\(name)', which the model does not have")
            }
        }
        return (entities, configurations.isEmpty ? nil : configurations)
    }

    // MARK: Entities

    private mutating func entity(_ node: XMLNode) throws -> ModelFile.Entity {
        let name = try required("name", of: node)
        lines[.init(version: version, entity: name)] = node.line
        checkAttributes(of: node, known: ["name", "representedClassName", "parentEntity", "isAbstract", "versionHashModifier", "elementID",
                                          "syncable", "codeGenerationType"], what: "entity '\(name)'")
        var entity = ModelFile.Entity(name: name, parent: node["parentEntity"], abstract: node.flag("isAbstract") ? true : nil)
        entity.representedClassName = node["representedClassName"]
        entity.versionHashModifier = node["versionHashModifier"]
        entity.renamingIdentifier = node["elementID"]
        var attributes: [ModelFile.Attribute] = []
        var relationships: [ModelFile.Relationship] = []
        var constraints: [[String]] = []
        var indexes: [ModelFile.FetchIndex] = []
        for child in node.children {
            switch child.name {
            case "attribute": if let attribute = try attribute(child, entity: name) { attributes.append(attribute) }
            case "relationship": relationships.append(try relationship(child, entity: name))
            case "fetchIndex": if let index = fetchIndex(child, entity: name) { indexes.append(index) }
            case "uniquenessConstraints":
                constraints += child.children(named: "uniquenessConstraint").map { $0.children(named: "constraint").compactMap { $0["value"] } }
            case "compoundIndexes":
                // Docs/coredata-behaviour.md §15.2: the older form of a fetch index, named by its place.
                for (number, compound) in child.children(named: "compoundIndex").enumerated() {
                    let elements = compound.children(named: "index").compactMap { $0["value"] }.map { ModelFile.FetchIndex.Element(property: $0) }
                    indexes.append(ModelFile.FetchIndex(name: "compoundIndex\(number + 1)", elements: elements))
                }
            case "fetchedProperty":
                skip(child, in: "entity '\(name)'", "a fetched property is a fetch run when the app reads it, never stored; the store and every save are the same without it")
            case "userInfo":
                skip(child, in: "entity '\(name)'", "user info is the app's own data; nothing in the store depends on it")
            default:
                skip(child, in: "entity '\(name)'", "an element this reader does not know; the entity is read without it")
            }
        }
        entity.attributes = attributes.isEmpty ? nil : attributes
        entity.relationships = relationships.isEmpty ? nil : relationships
        entity.uniquenessConstraints = constraints.isEmpty ? nil : constraints
        entity.fetchIndexes = indexes.isEmpty ? nil : indexes
        return entity
    }

    // MARK: Attributes

    /// Xcode's `attributeType` values and the types they are.
    static let attributeTypes: [String: AttributeType] = [
        "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64, "Decimal": .decimal, "Double": .double,
        "Float": .float, "String": .string, "Boolean": .boolean, "Date": .date, "Binary": .binaryData, "UUID": .uuid, "URI": .uri,
        "Transformable": .transformable,
    ]

    /// Types Xcode offers that this library does not model: Docs/coredata-behaviour.md §15.3.
    static let unmodelledTypes: Set<String> = ["Undefined", "Object ID", "ObjectID", "Composite"]

    static let knownAttributeKeys: Set<String> = [
        "name", "optional", "attributeType", "defaultValueString", "defaultDateTimeInterval", "usesScalarValueType",
        "minValueString", "maxValueString", "minDateTimeInterval", "maxDateTimeInterval", "regularExpressionString", "indexed",
        "transient", "allowsExternalBinaryDataStorage", "valueTransformerName", "customClassName", "derived",
        "derivationExpression", "preserveAfterDeletion", "elementID", "syncable", "spotlightIndexingEnabled", "allowsCloudEncryption",
        "composite", "versionHashModifier",
    ]

    private mutating func attribute(_ node: XMLNode, entity: String) throws -> ModelFile.Attribute? {
        let name = try required("name", of: node)
        let place = "attribute '\(name)' of entity '\(entity)'"
        let typeName = try required("attributeType", of: node)
        // Docs/coredata-behaviour.md §15.3: what is not modelled is skipped when it is never stored and fails the
        // load when it is, as leaving a stored value out would change the store and every save.
        if node.flag("derived") {
            throw XcodeModelError(path: path, line: node.line, "\(place) is derived (\(node["derivationExpression"] ?? "no expression")): the store computes and keeps its value at each save, which this library does not model")
        }
        if Self.unmodelledTypes.contains(typeName) {
            guard node.flag("transient") else {
                throw XcodeModelError(path: path, line: node.line, "\(place) is of type \(typeName), which this library does not model, and is stored; only a transient one can be left out")
            }
            skip(node, in: "entity '\(entity)'", "a transient attribute of type \(typeName): never stored, and this library has no such type; the store and every save are the same without it")
            return nil
        }
        guard let type = Self.attributeTypes[typeName] else {
            throw XcodeModelError(path: path, line: node.line, "\(place) has attributeType '\(typeName)', which Xcode does not write; known: \(Self.attributeTypes.keys.sorted().joined(separator: ", "))")
        }
        checkAttributes(of: node, known: Self.knownAttributeKeys, what: place)
        lines[.init(version: version, entity: entity, property: name)] = node.line
        skipHashModifier(of: node, in: place)
        skipChildren(of: node, in: place)
        var attribute = ModelFile.Attribute(name: name, type: type, optional: node.flag("optional") ? nil : false,
                                            indexed: node.flag("indexed") ? true : nil)
        attribute.defaultValue = try defaultValue(node, type: type, place: place)
        try readRange(node, type: type, place: place, into: &attribute)
        attribute.transient = node.flag("transient") ? true : nil
        attribute.preservesValueInHistoryOnDeletion = node.flag("preserveAfterDeletion") ? true : nil
        attribute.renamingIdentifier = node["elementID"]
        attribute.valueTransformerName = node["valueTransformerName"]
        attribute.customClassName = node["customClassName"]
        attribute.allowsExternalBinaryDataStorage = node.flag("allowsExternalBinaryDataStorage") ? true : nil
        attribute.regularExpression = node["regularExpressionString"]
        return attribute
    }

    /// The default value: `defaultDateTimeInterval` for a date (seconds since 2001-01-01, as Core Data's dates),
    /// `defaultValueString` for the rest; an empty string is no default but for a String.
    private func defaultValue(_ node: XMLNode, type: AttributeType, place: String) throws -> ModelFile.Scalar? {
        if type == .date {
            guard let text = node["defaultDateTimeInterval"] else { return nil }
            return .number(try number(text, "defaultDateTimeInterval", node, place))
        }
        guard let text = node["defaultValueString"], !text.isEmpty || type == .string else { return nil }
        switch type {
        case .string, .decimal, .uuid, .uri: return .string(text)
        case .boolean:
            guard text == "YES" || text == "NO" else {
                throw XcodeModelError(path: path, line: node.line, "\(place) has defaultValueString '\(text)', not YES or NO")
            }
            return .bool(text == "YES")
        case .integer16, .integer32, .integer64, .double, .float: return .number(try number(text, "defaultValueString", node, place))
        case .date, .binaryData, .transformable:
            throw XcodeModelError(path: path, line: node.line, "\(place) has a defaultValueString, which a \(type.rawValue) attribute cannot have")
        }
    }

    /// `minValueString` / `maxValueString`: lengths for a String or Binary, values for a number;
    /// `minDateTimeInterval` / `maxDateTimeInterval` for a date (Docs/coredata-behaviour.md §15.2).
    private func readRange(_ node: XMLNode, type: AttributeType, place: String, into attribute: inout ModelFile.Attribute) throws {
        switch type {
        case .string, .binaryData:
            attribute.minLength = try node["minValueString"].map { try length($0, "minValueString", node, place) }
            attribute.maxLength = try node["maxValueString"].map { try length($0, "maxValueString", node, place) }
        case .date:
            attribute.minValue = try node["minDateTimeInterval"].map { try number($0, "minDateTimeInterval", node, place) }
            attribute.maxValue = try node["maxDateTimeInterval"].map { try number($0, "maxDateTimeInterval", node, place) }
        case .integer16, .integer32, .integer64, .double, .float, .decimal:
            attribute.minValue = try node["minValueString"].map { try number($0, "minValueString", node, place) }
            attribute.maxValue = try node["maxValueString"].map { try number($0, "maxValueString", node, place) }
        case .boolean, .uuid, .uri, .transformable:
            break
        }
    }

    private func number(_ text: String, _ key: String, _ node: XMLNode, _ place: String) throws -> Double {
        guard let value = Double(text) else { throw XcodeModelError(path: path, line: node.line, "\(place) has \(key) '\(text)', not a number") }
        return value
    }

    private func length(_ text: String, _ key: String, _ node: XMLNode, _ place: String) throws -> Int {
        guard let value = Int(text), value >= 0 else { throw XcodeModelError(path: path, line: node.line, "\(place) has \(key) '\(text)', not a length") }
        return value
    }

    // MARK: Relationships

    static let deleteRules: [String: DeleteRule] = ["Nullify": .nullify, "Cascade": .cascade, "Deny": .deny, "No Action": .noAction]

    private mutating func relationship(_ node: XMLNode, entity: String) throws -> ModelFile.Relationship {
        let name = try required("name", of: node)
        let place = "relationship '\(name)' of entity '\(entity)'"
        checkAttributes(of: node, known: ["name", "optional", "toMany", "ordered", "minCount", "maxCount", "deletionRule", "destinationEntity",
                                          "inverseName", "inverseEntity", "transient", "elementID", "syncable", "spotlightIndexingEnabled",
                                          "versionHashModifier"], what: place)
        lines[.init(version: version, entity: entity, property: name)] = node.line
        skipHashModifier(of: node, in: place)
        skipChildren(of: node, in: place)
        let destination = try required("destinationEntity", of: node)
        // Docs/coredata-behaviour.md §15.2: Core Data only warns about a relationship without an inverse; this
        // library keeps both sides of every relationship and needs it.
        guard let inverse = node["inverseName"] else {
            throw XcodeModelError(path: path, line: node.line, "\(place) has no inverse (Core Data warns; this library needs one): give it an inverse relationship on '\(destination)'")
        }
        let rule = try node["deletionRule"].map { text in
            guard let rule = Self.deleteRules[text] else {
                throw XcodeModelError(path: path, line: node.line, "\(place) has deletionRule '\(text)'; known: Nullify, Cascade, Deny, No Action")
            }
            return rule
        }
        let toMany = node.flag("toMany")
        var relationship = ModelFile.Relationship(name: name, destination: destination, inverse: inverse, toMany: toMany ? true : nil,
                                                  deleteRule: rule == .nullify ? nil : rule, transient: node.flag("transient") ? true : nil)
        relationship.optional = node.flag("optional") ? nil : false
        relationship.ordered = node.flag("ordered") ? true : nil
        relationship.renamingIdentifier = node["elementID"]
        // A to-one's counts are implied (Xcode writes maxCount="1"); a to-many's 0 is no bound.
        if toMany {
            relationship.minCount = try node["minCount"].map { try length($0, "minCount", node, place) }.flatMap { $0 == 0 ? nil : $0 }
            relationship.maxCount = try node["maxCount"].map { try length($0, "maxCount", node, place) }.flatMap { $0 == 0 ? nil : $0 }
        }
        return relationship
    }

    // MARK: Fetch indexes

    /// A fetch index, or nil when it is left out: an element that is an expression, or an R-tree index
    /// (Docs/coredata-behaviour.md §15.3: an index changes how fast a fetch runs, never what it returns).
    private mutating func fetchIndex(_ node: XMLNode, entity: String) -> ModelFile.FetchIndex? {
        let name = node["name"] ?? ""
        var elements: [ModelFile.FetchIndex.Element] = []
        for element in node.children(named: "fetchIndexElement") {
            guard let property = element["property"] else {
                skip(node, in: "entity '\(entity)'", "an index element that is an expression is not modelled; an index changes how fast a fetch runs, never what it returns")
                return nil
            }
            guard (element["type"] ?? "Binary") == "Binary" else {
                skip(node, in: "entity '\(entity)'", "an \(element["type"] ?? "") index is not modelled; an index changes how fast a fetch runs, never what it returns")
                return nil
            }
            elements.append(ModelFile.FetchIndex.Element(property: property, ascending: element["order"] == "descending" ? false : nil))
        }
        return ModelFile.FetchIndex(name: name, elements: elements)
    }

    // MARK: Support

    private func required(_ key: String, of node: XMLNode) throws -> String {
        guard let value = node[key], !value.isEmpty else {
            throw XcodeModelError(path: path, line: node.line, "<\(node.name)> has no \(key)")
        }
        return value
    }

    /// Lists each attribute of `node` this reader does not know, once, and reads the element without it
    /// (Docs/coredata-behaviour.md §15.4).
    private mutating func checkAttributes(of node: XMLNode, known: Set<String>, what: String) {
        for unknown in node.attributes.keys.sorted() where !known.contains(unknown) {
            skipped.append(.init(file: path, line: node.line, element: "attribute '\(unknown)' of \(what)",
                                 why: "an attribute this reader does not know; the element is read without it"))
        }
    }

    /// Lists a property's `versionHashModifier`: the model file has none, and what it does in Core Data (a
    /// migration that copies the same values) changes no value (Docs/coredata-behaviour.md §15.3).
    private mutating func skipHashModifier(of node: XMLNode, in place: String) {
        guard let modifier = node["versionHashModifier"] else { return }
        skipped.append(.init(file: path, line: node.line, element: "versionHashModifier=\"\(modifier)\" of \(place)",
                             why: "a property's version hash modifier only makes Core Data migrate a store whose values stay the same; the model file has none"))
    }

    /// Lists the elements inside a property: its user info, or what this reader does not know.
    private mutating func skipChildren(of node: XMLNode, in place: String) {
        for child in node.children {
            skip(child, in: place, child.name == "userInfo"
                 ? "user info is the app's own data; nothing in the store depends on it"
                 : "an element this reader does not know; the property is read without it")
        }
    }

    /// Lists `node`, in `place` (`entity 'Order'`, `attribute 'name' of entity 'Author'`), with why it is left out.
    private mutating func skip(_ node: XMLNode, in place: String? = nil, _ why: String) {
        let name = node["name"].map { " name=\"\($0)\"" } ?? ""
        let element = "<\(node.name)\(name)>" + (place.map { " in \($0)" } ?? "")
        skipped.append(.init(file: path, line: node.line, element: element, why: why))
    }
}
