/// One problem found in a configuration file, located precisely enough to fix it:
/// `/etc/fetchd/handlers.d/news.toml:7: key "deadline": "soon" is not a duration; ...`.
public struct ConfigDiagnostic: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The file the problem is in.
    public var file: String
    /// The 1-based line of the offending key or table, or nil when the file itself is at fault.
    public var line: Int?
    /// The offending key (as written in its table, e.g. `deadline`), if one is to blame.
    public var key: String?
    /// What is wrong and what is expected instead.
    public var message: String
    /// The handler the problem belongs to, when it is inside a handler table.
    public var handler: String?

    /// Creates a diagnostic.
    public init(file: String, line: Int?, key: String?, message: String, handler: String? = nil) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.handler = handler
    }

    /// `file:line: key "k": message`, the format compilers use so editors can jump to it.
    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        text += ": "
        if let key { text += "key \"\(key)\": " }
        return text + message
    }
}

/// The main configuration file could not be used, so the daemon cannot start.
public struct ConfigLoadError: Error, Sendable, CustomStringConvertible {
    /// Every problem found in the main file.
    public var diagnostics: [ConfigDiagnostic]

    /// Creates the error from the problems found.
    public init(diagnostics: [ConfigDiagnostic]) { self.diagnostics = diagnostics }

    /// All problems, one per line, followed by what to do.
    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
            + "\nfix the file (fetchd --check-config lists every problem) and start fetchd again"
    }
}
