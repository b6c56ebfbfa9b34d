import Foundation

/// The fuzz targets: every parser of bytes fetchd did not write itself. libFuzzer drives them
/// through `fetchd-fuzz` (`make fuzz`, with `FETCHD_FUZZ` naming the target), and
/// FetchdFuzzingTests runs each over its committed seeds in `make test`. A target traps
/// (`precondition`) when an input breaks a property the daemon relies on; the fuzzer reports
/// that like a crash, with the input.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The TOML config loader, its validation and line index (an input as the main file and as
    /// a handler file).
    case config
    /// The usage-trace parser, with the model and planner fed what it parsed.
    case trace
    /// The control protocol's request lines, as a peer on the socket sends them.
    case control
    /// Response headers as a server sends them, line by line into the fields the fetch reads:
    /// status, `Retry-After`, `Cache-Control`, `Expires`, `Content-Range`, `Content-Length`,
    /// validators, and the HTTP dates among them.
    case headers
    /// Raw bytes sent to the push listener (a real one, on a loopback port, over a sink that
    /// checks pushes as the daemon does): whatever arrives, it answers or closes, and still takes
    /// a good push afterwards.
    case push
    /// The JSON fetchd reads back from disk: a snapshot's `meta.json` and a transfer's resume
    /// record (an input as each).
    case json
    /// Method calls of the D-Bus API (`BusCallScript`: built from the input value by value, then
    /// read as the daemon reads a call), and a registration's options made into a handler.
    case dbus

    /// Runs one input.
    public func run(_ data: Data) {
        switch self {
        case .config: Self.config(data)
        case .trace: Self.trace(data)
        case .control: Self.control(data)
        case .headers: Self.headers(data)
        case .push: PushHarness.shared.exchange(Array(data))
        case .json: Self.json(data)
        case .dbus: Self.busCall(data)
        }
    }

    /// Where its seeds are, relative to the package: committed inputs the fuzzer starts from and
    /// `make test` replays.
    public var seedFolders: [String] {
        switch self {
        case .config: ["config", "Tests/FetchdConfigTests/Fixtures/broken"]
        case .trace: ["Tests/FetchdPlannerTests/Traces"]
        case .control, .headers, .push, .json, .dbus: ["Tests/Fuzz/\(rawValue)"]
        }
    }
}
