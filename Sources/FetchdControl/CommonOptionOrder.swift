/// Lets `fetchctl`'s common options come before the command, as `systemctl --user status` takes
/// them: `fetchctl --socket PATH status` is read as `fetchctl status --socket PATH`. The argument
/// parser takes an option only after the command that declares it, and every command that talks
/// to the daemon declares these.
public enum CommonOptionOrder {
    /// Options that take a value (`--socket PATH` or `--socket=PATH`).
    public static let valued = ["--socket"]
    /// Flags.
    public static let flags = ["--json"]

    /// `arguments` (without the program's name) with the common options that lead them moved
    /// after the command that follows; when no command follows, after `defaultCommand`. Anything
    /// else is left as it is, for the parser to judge (an option a command does not take is
    /// still refused by that command).
    public static func reordered(_ arguments: [String], commands: Set<String>, defaultCommand: String) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if flags.contains(argument) || valued.contains(where: { argument.hasPrefix($0 + "=") }) {
                leading.append(argument)
                index += 1
            } else if valued.contains(argument), index + 1 < arguments.count {
                leading += arguments[index...(index + 1)]
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty else { return arguments }
        let rest = arguments[index...]
        if let command = rest.first, commands.contains(command) {
            return [command] + leading + rest.dropFirst()
        }
        return [defaultCommand] + leading + rest
    }
}
