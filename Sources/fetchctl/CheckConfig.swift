import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl check-config FILE`: validate without a daemon.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Check a config file (main or handler file) without a daemon.")
    @Argument(help: "The file to check (default \(Defaults.configFile)).")
    var file: String = Defaults.configFile
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        let problems = ConfigLoader.check(path: file)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(problems), as: UTF8.self))
        } else {
            problems.forEach { print($0.description) }
            print(problems.isEmpty ? "\(file): OK" : "\(problems.count) problem(s) found")
        }
        if !problems.isEmpty { throw ExitCode(1) }
    }
}
