/// Path arithmetic on plain strings.
///
/// Not `NSString.deletingLastPathComponent`: swift-corelibs-foundation traps on some relative
/// paths with a one-letter first component (`"r/state"`), which an administrator may well pass.
public enum PathName {
    /// The folder part of `path`: `"/a/b"` → `"/a"`, `"/a"` → `"/"`, `"b"` → `""`.
    public static func directory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        return String(trimmed[..<slash])
    }

    /// The last component of `path`: `"/a/b"` → `"b"`.
    public static func lastComponent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
        return String(trimmed[trimmed.index(after: slash)...])
    }
}
