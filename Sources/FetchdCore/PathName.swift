import Foundation

/// Path arithmetic on plain strings.
///
/// Not `NSString.deletingLastPathComponent`: swift-corelibs-foundation traps on some relative
/// paths with a one-letter first component (`"r/state"`), which an administrator may well pass.
public enum PathName {
    /// The folder part of `path`: `"/a/b"` → `"/a"`, `"/a"` → `"/"`, `"b"` → `""`.
    public static func directory(of path: String) -> String {
        let bytes = trimmed(path)
        guard let slash = bytes.lastIndex(of: slashByte) else { return "" }
        if slash == bytes.startIndex { return "/" }
        return String(Substring(bytes[..<slash]))
    }

    /// `path` from the root: a relative one is taken from the working directory, as the
    /// kernel takes it (`news.toml` in `/etc/fetchd/handlers.d` is `/etc/fetchd/handlers.d/news.toml`).
    public static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        let cwd = FileManager.default.currentDirectoryPath
        return (cwd == "/" ? "" : cwd) + "/" + (path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }

    /// The last component of `path`: `"/a/b"` → `"b"`.
    public static func lastComponent(of path: String) -> String {
        let bytes = trimmed(path)
        guard let slash = bytes.lastIndex(of: slashByte) else { return String(Substring(bytes)) }
        return String(Substring(bytes[bytes.index(after: slash)...]))
    }

    private static let slashByte = UInt8(ascii: "/")

    /// `path` without trailing slashes (but `/` stays), as UTF-8. Bytes, as the kernel reads a
    /// path, not characters: a `/` byte is never part of another scalar's encoding, but a `/`
    /// can be part of a grapheme cluster (followed by a combining mark or a joiner, or after a
    /// prepended mark), which a split on characters would not see as a separator. Grapheme
    /// breaking also made this a few per cent of a wake's CPU, called for every snapshot file.
    private static func trimmed(_ path: String) -> Substring.UTF8View {
        var bytes = Substring(path).utf8
        while bytes.count > 1, bytes.last == slashByte { bytes = bytes.dropLast() }
        return bytes
    }
}
