import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A Python script playing a bus service on a private bus, in Debian's Python with python3-dbus
/// (`/usr/bin/python3`: the `python3` on PATH may lack the module), driven by commands on its
/// stdin, one per line as `<n> <command>`, each answered `<n> ok [value]`; it prints `0 ok` when
/// ready. Never blocks a thread of the test pool: output is read on a dispatch thread, answers are
/// awaited by polling.
public final class ScriptedBusPeer {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let printed = Printed()
    private var sent = 0

    private final class Printed: Sendable {
        private let text = Mutex("")
        func append(_ data: Data) { text.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        func read() -> String { text.withLock { $0 } }
    }

    /// The end of every script: a GLib main loop that hands each stdin line to the script's
    /// `command(line)` function, says it is ready, and quits when stdin closes.
    public static let commandLoop = """

        def on_input(source, condition):
            line = sys.stdin.readline()
            if not line:
                loop.quit()
                return False
            command(line)
            return True

        loop = GLib.MainLoop()
        GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, on_input)
        print("0 ok ready", flush=True)
        loop.run()
        """

    /// Starts `script` (which defines `command(line)`; `commandLoop` is added) with `arguments`
    /// and waits for its ready line.
    public init(script: String, arguments: [String]) async throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script + Self.commandLoop] + arguments
        process.standardInput = input
        process.standardOutput = output
        output.fileHandleForReading.readabilityHandler = { [printed] handle in printed.append(handle.availableData) }
        try process.run()
        _ = try await answer(to: 0)
    }

    /// Sends a command and returns its answer's value.
    @discardableResult
    public func send(_ command: String) async throws -> String {
        sent += 1
        try input.fileHandleForWriting.write(contentsOf: Data("\(sent) \(command)\n".utf8))
        return try await answer(to: sent)
    }

    /// Polls `command` (which answers a number) until `accept` takes its value, at most 30 s.
    public func poll(_ command: String, until accept: (Int) -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let value = Int(try await send(command)), accept(value) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    private func answer(to number: Int) async throws -> String {
        let prefix = "\(number) ok"
        var found: String?
        _ = await waitUntil(timeoutSeconds: 20) {
            found = printed.read().split(separator: "\n").first { $0.hasPrefix(prefix + " ") || $0 == prefix }.map(String.init)
            return found != nil || !process.isRunning
        }
        guard let found else { throw PeerError.noAnswer(command: number, printed: printed.read()) }
        return String(found.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
    }

    /// Kills the script without waiting for it (Foundation reaps it).
    deinit {
        output.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    enum PeerError: Error { case noAnswer(command: Int, printed: String) }
}
