import Foundation
import Testing
import ObjectGraph
import TraceReplay
@testable import Workbench

/// The operation trace's model is the model file's own type (ModelSchema's ``ModelFile``): a trace carries every
/// field a model file has, and the replay builds from it the model the run had (Docs/calibration.md).
@Suite struct TraceModelTests {
    /// A model file with every field of every kind set somewhere: each kind of default value, bounds, renamings,
    /// indexes, transient attributes and relationships, constraints, inheritance, ordered relationships,
    /// Transformable attributes, patterns.
    static let everyField = """
    {"entities":[
     {"name":"Item","abstract":true,"renamingIdentifier":"OldItem","uniquenessConstraints":[["id"]],
      "representedClassName":"ItemMO","versionHashModifier":"2",
      "attributes":[{"name":"id","type":"integer64","optional":false,"defaultValue":0,"minValue":0,"maxValue":1000000,
                     "indexed":true,"preservesValueInHistoryOnDeletion":true},
                    {"name":"title","type":"string","defaultValue":"untitled","minLength":1,"maxLength":80,"renamingIdentifier":"name"},
                    {"name":"done","type":"boolean","defaultValue":false},
                    {"name":"scratch","type":"double","transient":true},
                    {"name":"code","type":"string","regularExpression":"[A-Z]+"},
                    {"name":"colour","type":"transformable","valueTransformerName":"NSSecureUnarchiveFromData",
                     "customClassName":"NSArray","allowsExternalBinaryDataStorage":true}],
      "relationships":[{"name":"tags","destination":"Tag","inverse":"items","toMany":true,"optional":true,"deleteRule":"cascade",
                        "minCount":0,"maxCount":5,"renamingIdentifier":"labels","ordered":true},
                       {"name":"cursor","destination":"Tag","inverse":"cursorOf","transient":true}],
      "fetchIndexes":[{"name":"byTitleAndId","elements":["title",{"property":"id","ascending":false}]}]},
     {"name":"Book","parent":"Item","abstract":false,"attributes":[{"name":"isbn","type":"string"}]},
     {"name":"Tag","attributes":[{"name":"name","type":"string"}],
      "relationships":[{"name":"items","destination":"Item","inverse":"tags","toMany":true},
                       {"name":"cursorOf","destination":"Item","inverse":"cursor","transient":true}]}]}
    """

    /// The names of `values`' optional fields that none of them sets.
    static func unset(_ values: [Any]) -> Set<String> {
        let unsetByValue = values.map { value in
            Set(Mirror(reflecting: value).children.compactMap { child -> String? in
                let field = Mirror(reflecting: child.value)
                return field.displayStyle == .optional && field.children.isEmpty ? child.label : nil
            })
        }
        return unsetByValue.dropFirst().reduce(unsetByValue.first ?? []) { $0.intersection($1) }
    }

    /// What ObjectGraph built of an entity, every field it keeps.
    static func describe(_ entity: EntityDescription) -> String {
        "\(entity.name) parent \(entity.parentName ?? "-") abstract \(entity.isAbstract) renamed \(entity.renamingIdentifier ?? "-") "
            + "\(entity.attributes) \(entity.relationships) \(entity.transientRelationships) "
            + "\(entity.uniquenessConstraints) \(entity.fetchIndexes)"
    }

    @Test("The trace's model and a model file are one type, down to each attribute")
    func traceModelIsTheModelFileType() {
        #expect(TraceModel.Entity.self == ModelFile.Entity.self)
        #expect(TraceModel.Attribute.self == ModelFile.Attribute.self)
        #expect(TraceModel.Relationship.self == ModelFile.Relationship.self)
        #expect(TraceModel.FetchIndex.self == ModelFile.FetchIndex.self)
        #expect(TraceModel.Scalar.self == ModelFile.Scalar.self)
    }

    @Test("A trace carries every field of the model file, and the replay builds the same model from it")
    func traceCarriesEveryFieldOfTheModelFile() throws {
        let file = try JSONDecoder().decode(ModelFile.self, from: Data(Self.everyField.utf8))
        // The fixture sets every field a model file's entities have: a field added to the format must be added here.
        let attributes = file.entities.flatMap { $0.attributes ?? [] }
        let relationships = file.entities.flatMap { $0.relationships ?? [] }
        let elements = file.entities.flatMap { $0.fetchIndexes ?? [] }.flatMap(\.elements)
        #expect(Self.unset(file.entities).isEmpty, "entity fields the fixture never sets: \(Self.unset(file.entities))")
        #expect(Self.unset(attributes).isEmpty, "attribute fields the fixture never sets: \(Self.unset(attributes))")
        #expect(Self.unset(relationships).isEmpty, "relationship fields the fixture never sets: \(Self.unset(relationships))")
        #expect(Self.unset(elements).isEmpty, "fetch index element fields the fixture never sets: \(Self.unset(elements))")

        let header = TraceHeader(scenario: "s", variant: "default", seed: 1, profile: "p",
                                 models: [TraceModel(entities: file.entities), TraceModel(entities: file.entities, version: "next")])
        let (read, _) = try TraceCoding.read(TraceCoding.line(header), name: "header")
        #expect(read == header)
        #expect(read.models.map(\.version) == [nil, "next"])

        let back = ObjectGraphReplayBackend.modelFile(read.models, version: 0)
        #expect(back == file)
        let replayed = try ManagedObjectModel(file: back)
        let direct = try ManagedObjectModel(file: file)
        #expect(replayed.entities.map(Self.describe) == direct.entities.map(Self.describe))
        #expect(replayed.versionHash == direct.versionHash)
        let versioned = try ManagedObjectModel(file: ObjectGraphReplayBackend.modelFile(read.models, version: 1))
        #expect(versioned.versionName == "next")
        #expect(versioned.entities.map(Self.describe) == direct.entities.map(Self.describe))
    }

    @Test("A trace writes a fetch index element as a mapping, a model file as the property's name")
    func fetchIndexElementsKeepEachFormatsBytes() throws {
        let element = ModelFile.FetchIndex.Element(property: "title")
        #expect(String(decoding: TraceCoding.line(element), as: UTF8.self) == #"{"property":"title"}"#)
        #expect(String(decoding: try JSONEncoder().encode([element]), as: UTF8.self) == #"["title"]"#)
        let descending = ModelFile.FetchIndex.Element(property: "title", ascending: false)
        #expect(String(decoding: TraceCoding.line(descending), as: UTF8.self) == #"{"ascending":false,"property":"title"}"#)
        let decoded = try JSONDecoder().decode([ModelFile.FetchIndex.Element].self, from: Data(#"["a",{"property":"a"}]"#.utf8))
        #expect(decoded == [.init(property: "a"), .init(property: "a")])
    }
}
