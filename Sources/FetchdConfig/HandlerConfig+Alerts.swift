import FetchdCore

extension HandlerConfig {
    /// The program run when this handler starts failing (`alertAfter` failures in a row) and
    /// when it next succeeds: its own `on_failure`, else the main file's, as systemd's
    /// `OnFailure=` of a unit; nil when neither is set, or the handler's is `[]` (it opts out).
    /// fetchd and fetchd-runas resolve it the same way, from the same files.
    public func alertCommand(daemon: DaemonConfig) -> [String]? {
        guard let command = onFailure ?? daemon.onFailure, !command.isEmpty else { return nil }
        return command
    }

    /// Reads `on_failure` and `alert_after` (the main file's `alert_after` when unset).
    mutating func readAlertOptions(_ reader: inout TableReader, daemon: DaemonConfig) {
        alertAfter = daemon.alertAfter
        onFailure = Self.readAlertProgram(from: &reader)
        if let value = reader.int("alert_after", in: 1...Defaults.alertAfterMax) { alertAfter = value }
    }

    /// An `on_failure` argv from `reader`'s table: nil when unset, `[]` for none.
    static func readAlertProgram(from reader: inout TableReader) -> [String]? {
        guard let command = reader.stringArray("on_failure", example: commandExample, allowsEmpty: true) else { return nil }
        guard let program = command.first else { return [] }
        guard !program.isEmpty else {
            reader.report("on_failure", "the program (first element) is empty; expected an argv such as "
                + "[\"/usr/local/bin/fetchd-alert\"], or [] for none")
            return nil
        }
        return command
    }
}
