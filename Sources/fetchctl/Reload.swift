import ArgumentParser
import FetchdControl
import Foundation

/// `fetchctl reload`: what `systemctl reload fetchd` runs (`ExecReload=`). It waits for the
/// daemon to read its configuration again and fails when the configuration was rejected, so the
/// admin's command says so; the daemon keeps the previous one either way.
struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make fetchd read its configuration again; fail if it rejects it (it then keeps the previous one).")
    @OptionGroup var connection: ConnectionOptions

    /// How long to wait for the daemon's answer: loading thousands of handler files takes a
    /// while; less than systemd's 90 s for ExecReload=, so this says what happened, not systemd.
    static let timeoutSeconds = 80

    func run() throws {
        let response = try connection.send(ControlRequest(command: .reload), timeoutSeconds: Self.timeoutSeconds)
        guard let report = response.reload else {
            throw CleanExit.failure("fetchctl: fetchd gave no reload report (is it older than this fetchctl?)")
        }
        if connection.json {
            try connection.printJSON(report)
        } else if report.applied {
            let disabled = report.disabledHandlers > 0 ? ", \(report.disabledHandlers) disabled" : ""
            print("fetchd: configuration reloaded: \(report.handlers) handler(s)\(disabled)")
            for key in report.restartOnly { print("fetchd: \(key) changed: it takes effect only when fetchd restarts") }
        }
        guard report.applied else {
            let problems = report.problems.map { "  \($0)" }.joined(separator: "\n")
            throw CleanExit.failure("fetchctl: fetchd rejected the new configuration and keeps the previous one "
                + "(\(report.handlers) handler(s)); fix these and reload again:\n\(problems)")
        }
    }
}
