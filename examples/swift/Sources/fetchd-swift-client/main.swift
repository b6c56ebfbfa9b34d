// A small client of fetchd's D-Bus API (org.fetchd.Fetchd1, fetchd-dbus(7)) in Swift, through
// the FetchdClient library: what an application does to have its content fetched in the
// background and to read it. The same commands as examples/python/fetchd-client.py:
//
//     fetchd-swift-client [--system] register NAME URL [KEY=VALUE...]
//     fetchd-swift-client [--system] fetch NAME [TIMEOUT_S]   FetchNow, wait for FetchCompleted
//     fetchd-swift-client [--system] read NAME                 OpenSnapshot: metadata, then the content
//     fetchd-swift-client [--system] status NAME | use NAME | unregister NAME | list
//
// KEY=VALUE options are the keys of a handler file (fetchd.toml(5)): a value that reads as an
// integer is sent as one, true/false as a boolean, [a,b] as an array of strings, anything else
// as a string. Errors print "ERROR NAME: MESSAGE" and exit 1.
import FetchdClient
import Foundation

/// A handler option from the command line, typed as the Python client types it.
func optionValue(_ text: String) -> FetchdClient.Value {
    if text == "true" || text == "false" { return .bool(text == "true") }
    if text.hasPrefix("["), text.hasSuffix("]") {
        return .strings(text.dropFirst().dropLast().split(separator: ",").map(String.init))
    }
    if let number = Int64(text) { return .integer(number) }
    return .string(text)
}

/// A status or metadata value as one line shows it.
func text(_ value: FetchdClient.Value) -> String {
    switch value {
    case .bool(let value): "\(value)"
    case .integer(let value): "\(value)"
    case .unsigned(let value): "\(value)"
    case .double(let value): "\(value)"
    case .string(let value): value
    case .strings(let values): "[" + values.joined(separator: ", ") + "]"
    case .stringMap(let map): map.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    case .unsupported(let signature): "(\(signature))"
    }
}

/// Runs one command; returns the exit status.
func run(_ arguments: [String]) async throws(FetchdError) -> Int32 {
    let system = arguments.first == "--system"
    let arguments = system ? Array(arguments.dropFirst()) : arguments
    let needed = ["list": 1, "register": 3]
    guard let command = arguments.first, arguments.count >= needed[command, default: 2] else {
        print("ERROR usage: fetchd-swift-client [--system] register NAME URL [KEY=VALUE...] | fetch NAME [TIMEOUT_S]"
              + " | read NAME | status NAME | use NAME | unregister NAME | list")
        return 2
    }
    let name = arguments.count > 1 ? arguments[1] : ""
    let fetchd = try await FetchdClient(system ? .system : .session)
    switch command {
    case "register":
        var options: [String: FetchdClient.Value] = ["kind": .string("http"), "url": .string(arguments[2])]
        for pair in arguments.dropFirst(3) {
            let key = pair.prefix { $0 != "=" }
            options[String(key)] = optionValue(String(pair.dropFirst(key.count + 1)))
        }
        print(try await fetchd.register(name, options: options))
    case "fetch":
        // At most a day: a Duration cannot hold an infinite wait.
        let asked = arguments.count > 2 ? Double(arguments[2]) : nil
        let seconds = asked.flatMap { $0.isFinite ? min(max($0, 0), 86_400) : nil } ?? 30
        print(try await fetchd.fetch(name, timeout: .seconds(seconds)))
    case "read":
        let snapshot = try await fetchd.openSnapshot(name)
        let metadata = snapshot.metadata
        let lines: [(String, String?)] = [
            ("bytes", "\(metadata.bytes)"), ("content_type", metadata.contentType), ("etag", metadata.etag),
            ("fetched_at", metadata.fetchedAt.ISO8601Format()), ("last_modified", metadata.lastModified),
            ("sha256", metadata.sha256), ("version", metadata.version),
        ]
        for case let (key, value?) in lines { print("\(key)=\(value)") }
        print()
        fflush(nil)  // print buffers; the content goes straight to the descriptor, after it
        FileHandle.standardOutput.write(try snapshot.read())
    case "status":
        for (key, value) in try await fetchd.handler(name).sorted(by: { $0.key < $1.key }) { print("\(key)=\(text(value))") }
    case "use":
        try await fetchd.reportUse(name)
    case "unregister":
        try await fetchd.unregister(name)
    case "list":
        for handler in try await fetchd.handlers() { print(handler) }
    default:
        print("ERROR usage: unknown command \(command)")
        return 2
    }
    return 0
}

do throws(FetchdError) {
    exit(try await run(Array(CommandLine.arguments.dropFirst())))
} catch {
    print("ERROR \(error.name): \(error.message)")
    exit(1)
}
