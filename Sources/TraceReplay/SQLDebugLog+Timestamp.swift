import Foundation

extension SQLDebugLog {
    /// The logging system's timestamp at the start of `line`, in nanoseconds since 1970 UTC; nil for a line without
    /// one (Core Data's own text carries no time of day).
    ///
    /// Read: `2024-03-01 10:22:33.123456+0100` (the Xcode console and `log stream` / `log show`), with a `T` or a
    /// space between date and time, up to nine digits of fraction, and a zone `Z`, `±HHMM` or `±HH:MM`. A time
    /// without a zone is taken as UTC: differences between two lines stay right except across a change of
    /// daylight-saving time. Colour escapes before it are skipped.
    public static func timestamp(_ raw: Substring) -> Int64? {
        let line = raw.contains("\u{1B}") ? withoutEscapes(raw) : String(raw)
        var reader = DigitReader(Array(line.utf8.prefix(48)))
        guard let year = reader.number(4), reader.take("-"), let month = reader.number(2), reader.take("-"), let day = reader.number(2),
              reader.take(" ") || reader.take("T"),
              let hour = reader.number(2), reader.take(":"), let minute = reader.number(2), reader.take(":"), let second = reader.number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var nanos: Int64 = 0
        if reader.take(".") || reader.take(",") {
            var digits = 0
            while let d = reader.digit() {
                if digits < 9 { nanos = nanos * 10 + Int64(d) }
                digits += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanos *= 10 }
        }
        var offset: Int64 = 0
        var sign: Int64 = 0
        if reader.take("+") { sign = 1 } else if reader.take("-") { sign = -1 } else { _ = reader.take("Z") }
        if sign != 0 {
            guard let hours = reader.number(2) else { return nil }
            _ = reader.take(":")
            let minutes = reader.number(2) ?? 0
            offset = sign * Int64(hours * 3600 + minutes * 60)
        }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offset
        return seconds * 1_000_000_000 + nanos
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Reads fixed-width fields of ASCII digits and single characters from the start of a line.
private struct DigitReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func digit() -> Int? {
        guard index < bytes.count, (48...57).contains(bytes[index]) else { return nil }
        defer { index += 1 }
        return Int(bytes[index] - 48)
    }

    mutating func number(_ width: Int) -> Int? {
        var value = 0
        for _ in 0..<width {
            guard let d = digit() else { return nil }
            value = value * 10 + d
        }
        return value
    }

    mutating func take(_ character: Character) -> Bool {
        guard index < bytes.count, let ascii = character.asciiValue, bytes[index] == ascii else { return false }
        index += 1
        return true
    }
}
