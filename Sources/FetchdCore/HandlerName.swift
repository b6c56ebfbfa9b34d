/// Rules for handler names. Names become directory names under the cache directory and
/// journal field values, so only a conservative character set is accepted.
public enum HandlerName {
    /// The longest accepted name, in characters.
    public static let maxLength = 64

    /// Returns nil when `name` is acceptable, otherwise what is wrong with it.
    public static func problem(with name: String) -> String? {
        guard !name.isEmpty else { return "the name is empty" }
        guard name.count <= maxLength else { return "the name is longer than \(maxLength) characters" }
        guard let first = name.unicodeScalars.first, isAlphanumeric(first) else {
            return "the name must start with a letter or digit"
        }
        for scalar in name.unicodeScalars where !(isAlphanumeric(scalar) || "-_.".unicodeScalars.contains(scalar)) {
            return "the name contains \"\(scalar.escaped(asASCII: true))\"; use only a-z, A-Z, 0-9, '-', '_' and '.'"
        }
        return nil
    }

    /// True when `name` satisfies the rules.
    public static func isValid(_ name: String) -> Bool { problem(with: name) == nil }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }
}
