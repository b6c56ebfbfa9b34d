import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl ping`: is the daemon there?
struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check that fetchd answers.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let pong = try connection.send(ControlRequest(command: .ping)).pong
        if connection.json { try connection.printJSON(pong) } else if let pong {
            print("fetchd \(pong.daemonVersion) (pid \(pong.pid)) is running")
        }
    }
}
