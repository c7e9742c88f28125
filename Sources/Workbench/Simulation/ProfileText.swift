import Foundation

/// Text that goes into a written profile (`Profiles/<name>.yaml`): values as YAML double-quoted scalars that read
/// back to the same text, and comment lines that stay one line whatever they quote.
enum ProfileText {
    /// A YAML double-quoted scalar: backslashes, quotes and control characters escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if isControl(scalar) {
                    out += String(format: "\\u%04X", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// `s` fit for a comment line: control characters and line separators as spaces.
    static func oneLine(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { isControl($0) ? " " : $0 }))
    }

    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators (which YAML 1.1 reads as breaks).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
