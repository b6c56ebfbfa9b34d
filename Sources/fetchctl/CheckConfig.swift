import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl check-config FILE`: validate without a daemon.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Check a config file (main or handler file) without a daemon.")
    @Argument(help: "The file to check (default \(Defaults.configFile); missing, it means the defaults, as fetchd starts).")
    var file: String?
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        // The same check, words and exit status as `fetchd --check-config`.
        let file = self.file ?? Defaults.configFile
        let examination = ConfigLoader.examine(path: file, requireMainFile: self.file != nil)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(examination.diagnostics), as: UTF8.self))
        } else {
            examination.lines(checked: file).forEach { print($0) }
        }
        if examination.exitStatus != 0 { throw ExitCode(examination.exitStatus) }
    }
}
