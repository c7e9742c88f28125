/// What happens to a relationship's destinations when its source is deleted.
public enum DeleteRule: String, Sendable, Codable, CaseIterable {
    /// Remove the deleted object from the destinations' inverse relationship.
    case nullify
    /// Delete the destinations too.
    case cascade
    /// Refuse the delete (a validation error at save) while there are destinations.
    case deny
    /// Do nothing; the destinations keep pointing at the deleted object.
    case noAction
}
