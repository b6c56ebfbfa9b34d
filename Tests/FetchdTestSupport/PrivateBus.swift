import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus daemon on a socket in a temp folder, standing in for the system bus (fetchd
/// finds it through `DBUS_SYSTEM_BUS_ADDRESS`). Its `--session` configuration lets any client
/// own any name, so a test can play logind.
public final class PrivateBus {
    /// The socket's path; the bus may be stopped and started again on it.
    public let socketPath: String
    /// `unix:path=...`, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public var address: String { "unix:path=\(socketPath)" }
    private var process: Process?
    /// Whether connections of every uid are accepted (a session bus accepts its own user's only).
    private let anyUser: Bool

    /// A bus at `socketPath`, not started yet; `anyUser` accepts connections of every uid, as a
    /// system bus does (tests of several callers).
    public init(socketPath: String, anyUser: Bool = false) {
        self.socketPath = socketPath
        self.anyUser = anyUser
    }

    /// Starts the daemon and waits until its socket exists.
    public func start() async throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--nofork", "--print-address", "--address=\(address)"]
            + (anyUser ? ["--config-file=\(try writeAnyUserConfig())"] : ["--session"])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice  // "Failed to set fd limit" without root's limits
        try process.run()
        self.process = process
        let path = socketPath
        guard await waitUntil(timeoutSeconds: 10, { FileManager.default.fileExists(atPath: path) }) else {
            throw BusError.notStarted
        }
    }

    /// Stops the daemon (every connection to it closes) and waits, polling, until it is gone.
    /// SIGKILL: a child spawned from one of the test's pool threads inherits their blocked
    /// signals, SIGTERM among them.
    public func stop() async {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = await waitUntil(timeoutSeconds: 10) { !process.isRunning }
        self.process = nil
    }

    /// Kills the daemon if it is still running (Foundation reaps it).
    deinit { if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    /// A session bus's policy, but open to every uid, beside the socket.
    private func writeAnyUserConfig() throws -> String {
        let path = socketPath + ".conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    enum BusError: Error { case notStarted }
}
