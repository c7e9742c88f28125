import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One element of a `contents` file: its name, attributes, line and children, as the parser met them.
struct XMLNode {
    var name: String
    var attributes: [String: String]
    var line: Int
    var children: [XMLNode] = []

    /// The attribute `key`, nil when absent.
    subscript(key: String) -> String? { attributes[key] }

    /// Whether the attribute `key` is Xcode's `YES`.
    func flag(_ key: String) -> Bool { attributes[key] == "YES" }

    /// The children named `name`, in the file's order.
    func children(named name: String) -> [XMLNode] { children.filter { $0.name == name } }

    /// Parses `data` (the `contents` file at `path`) into its root element.
    /// - Throws: ``XcodeModelError`` naming the path and line when the data is not well-formed XML.
    static func parse(_ data: Data, path: String) throws -> XMLNode {
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        guard parser.parse(), let root = builder.root else {
            // The parser's position is the document's end once it stops: the error's is kept when it occurs.
            guard let (line, column) = builder.errorPosition else {
                throw XcodeModelError(path: path, line: max(parser.lineNumber, 1), "not an Xcode model's XML: no root element")
            }
            throw XcodeModelError(path: path, line: line, "not an Xcode model's XML: not well-formed at column \(column)")
        }
        return root
    }
}

/// Builds the element tree from the parser's events, each element with the line the parser was on at its start.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    var stack: [XMLNode] = []
    var root: XMLNode?
    /// Where the first error occurred: line and column.
    var errorPosition: (Int, Int)?

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
                attributes attributeDict: [String: String] = [:]) {
        stack.append(XMLNode(name: elementName, attributes: attributeDict, line: parser.lineNumber))
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        if errorPosition == nil { errorPosition = (max(parser.lineNumber, 1), parser.columnNumber) }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty { root = node } else { stack[stack.count - 1].children.append(node) }
    }
}
