/// The attribute types Core Data offers.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
    case integer16, integer32, integer64, double, float, decimal, string, boolean, date, binaryData, uuid, uri
    /// A value kept as binary data through a value transformer.
    case transformable
}
