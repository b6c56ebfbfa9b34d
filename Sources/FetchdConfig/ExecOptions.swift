import FetchdCore

/// The program an `exec` handler runs.
public struct ExecOptions: Sendable, Equatable {
    /// The argv run (no shell involved).
    public var command: [String]
    /// The account the program runs as; nil: fetchd's own user.
    public var user: UserAccount?

    /// Runs `command` as fetchd's own user.
    public init(command: [String], user: UserAccount? = nil) {
        self.command = command
        self.user = user
    }

    /// Reads `command` and `user` from an exec handler's table; nil when there is no usable
    /// `command` (the problem is in `reader`).
    static func read(from reader: inout TableReader) -> ExecOptions? {
        let command = reader.stringArray("command", example: HandlerConfig.commandExample)
        var user: UserAccount?
        if let name = reader.string("user") {
            user = UserAccount.named(name)
            if user == nil {
                reader.report("user", "no user named \"\(name)\" on this system (getent passwd \(name)); create it or remove the key")
            }
        }
        guard let command else {
            if reader.table["command"] == nil {
                reader.report(nil, "an exec handler needs a \"command\" key: an argv array such as [\"/usr/bin/prog\", \"--flag\"]")
            }
            return nil
        }
        guard let program = command.first, !program.isEmpty else {
            reader.report("command", "the program (first element) is empty; expected a path such as \"/usr/bin/prog\"")
            return nil
        }
        return ExecOptions(command: command, user: user)
    }
}
