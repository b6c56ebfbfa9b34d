#if canImport(Glibc)
import Glibc
#endif
import FetchdCore
import Foundation

/// How version folders are named: a sequence number per handler, then the fetch's UTC time.
enum VersionName {
    /// The name of a handler's version number `sequence`, fetched at `date`:
    /// `00000042-20261121T083012Z`. Names sort as versions age, within and across handlers.
    static func make(sequence: Int, at date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text = DigitText(capacity: 24)
        text.append(sequence, width: 8)
        text.append("-")
        text.append(Int(parts.tm_year) + 1900, width: 4)
        text.append(Int(parts.tm_mon) + 1, width: 2)
        text.append(Int(parts.tm_mday), width: 2)
        text.append("T")
        text.append(Int(parts.tm_hour), width: 2)
        text.append(Int(parts.tm_min), width: 2)
        text.append(Int(parts.tm_sec), width: 2)
        text.append("Z")
        return text.text
    }

    /// The version number a name starts with; nil for a name fetchd did not make.
    static func sequence(of version: String) -> Int? {
        guard let dash = version.firstIndex(of: "-") else { return nil }
        return Int(version[..<dash])
    }
}
