/// One problem found in a configuration file, located precisely enough to fix it:
/// `/etc/fetchd/handlers.d/news.toml:7: key "deadline": "soon" is not a duration; ...`.
public struct ConfigDiagnostic: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// What the problem does to fetchd.
    public enum Effect: String, Sendable, Codable {
        /// fetchd does not start (a problem of the main file, a file it may not trust).
        case stopsStart = "stops-start"
        /// fetchd starts without the handler (or without every handler of the file).
        case skipsHandler = "skips-handler"
    }

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
    /// What it does to fetchd; set by the loader, which knows where the problem lies.
    public var effect: Effect = .skipsHandler

    /// Creates a diagnostic.
    public init(file: String, line: Int?, key: String?, message: String, handler: String? = nil) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.handler = handler
    }

    /// What the problem does, in words: "fetchd does not start", "handler \"news\" is left out".
    public var effectText: String {
        switch effect {
        case .stopsStart: "fetchd does not start"
        case .skipsHandler: handler.map { "handler \"\($0)\" is left out" } ?? "the file's handlers are left out"
        }
    }

    /// This problem, marked as stopping fetchd's start.
    func stoppingStart() -> ConfigDiagnostic {
        var stopping = self
        stopping.effect = .stopsStart
        return stopping
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
