import FetchdCore
import Foundation
import TOMLKit

/// A handler an application asks for over D-Bus (`RegisterHandler`): its name in the caller's
/// namespace and its options, read with the same keys and the same checks as a `[[handler]]`
/// table, so a registration and a handler file can never disagree on what a key means.
public struct Registration: Sendable, Equatable {
    /// One option's value as the caller typed it.
    public enum Value: Sendable, Equatable, Codable {
        /// A TOML boolean.
        case bool(Bool)
        /// A TOML integer.
        case integer(Int64)
        /// A TOML float.
        case double(Double)
        /// A TOML string.
        case string(String)
        /// A TOML array of strings.
        case strings([String])
        /// A TOML table of strings (`headers`).
        case table([String: String])
    }

    /// Who asks, which decides the keys and addresses it may use.
    public enum Caller: Sendable, Equatable {
        /// Root or a member of `control_group`: may name what the daemon can reach.
        case privileged
        /// Anyone else: only what reaches no further than the caller could itself.
        case unprivileged
    }

    /// The handler's name: the caller's name for it and the caller's uid.
    public let name: RegisteredName
    /// The options, by key.
    public let options: [String: Value]

    /// A registration of `name` with `options`.
    public init(name: RegisteredName, options: [String: Value]) {
        self.name = name
        self.options = options
    }

    /// Keys no registration may hold, with the reason a caller is told: each runs a program or
    /// reads a file as the daemon, which stays an administrator's decision in handler files.
    public static let refusedKeys = [
        "command": "handlers that run programs are configured in handler files by an administrator",
        "on_complete": "programs run only from handler files an administrator wrote",
        "on_failure": "programs run only from handler files an administrator wrote",
        "environment": "it is for programs, which run only from handler files",
        "push_token_file": "it names a file the daemon reads; push tokens are configured in handler files",
        "name": "the name is RegisterHandler's first argument",
    ]

    /// Keys a caller other than root or `control_group` may not use: each reaches what the caller
    /// itself could not (a file on the daemon's machine, another network path, another user).
    public static let privilegedKeys = [
        "allow_file_urls": "it reads files with the daemon's rights",
        "proxy": "it sends the daemon's requests through another network path",
        "ca_file": "it names a file the daemon reads",
        "user": "it acts as another user",
    ]

    /// The handler this registration describes, or every problem with it, each naming its key.
    /// Only `http` and `transfer` handlers can be registered. For an unprivileged caller the URL
    /// must name a host on the Internet at large: a loopback, private, link-local or otherwise
    /// non-global address written in it is refused here, and the address each fetch connects
    /// to is checked again (`HTTPOptions.globalAddressesOnly`).
    public func handler(daemon: DaemonConfig, caller: Caller) -> Result<HandlerConfig, Refusal> {
        var problems: [ConfigDiagnostic] = []
        func refuse(_ key: String, _ message: String) {
            problems.append(ConfigDiagnostic(file: Self.source, line: nil, key: key, message: message, handler: name.qualified))
        }
        for key in options.keys.sorted() {
            if let reason = Self.refusedKeys[key] { refuse(key, "not accepted over D-Bus: \(reason)") }
            if caller == .unprivileged, let reason = Self.privilegedKeys[key] {
                refuse(key, "only root and the control group may set it: \(reason)")
            }
        }
        if case .string(let kind) = options["kind"], kind == "exec" {
            refuse("kind", "exec handlers run programs; they are configured in handler files, never over D-Bus")
        }
        // The URL as written, checked beside the other keys so that one answer names every problem.
        if caller == .unprivileged, case .string(let url) = options["url"], URLSyntax.problem(with: url) == nil,
           let problem = URLSyntax.nonGlobalHost(in: url) {
            refuse("url", "\(problem); only root and the control group may register a handler for one")
        }
        let table = tomlTable()
        defer { table.clear() }
        var reader = TableReader(table: table, file: Self.source, lines: TOMLLineIndex(""),
                                 section: .init(name: "", element: nil))
        let read = HandlerConfig.read(from: &reader, daemon: daemon)
        // A key refused above is not reported again as the handler rules see it.
        let refused = Set(problems.compactMap(\.key))
        for problem in reader.diagnostics where !refused.contains(problem.key ?? "") {
            problems.append(ConfigDiagnostic(file: problem.file, line: nil, key: problem.key, message: problem.message,
                                             handler: name.qualified))
        }
        guard var handler = read, problems.isEmpty else {
            return .failure(Refusal(problems: problems.sorted { ($0.key ?? "") < ($1.key ?? "") }))
        }
        handler.name = name.qualified
        handler.origin = .registered(uid: name.uid)
        handler.sourceFile = "\(Self.source) by uid \(name.uid)"
        handler.sourceLine = nil
        handler.nameLine = nil
        // An application's launches are what fetchd learns from, as iOS learns from app
        // launches (ReportUse), unless the registration says otherwise.
        if options["usage"] == nil { handler.usage = [.explicit] }
        if caller == .unprivileged {
            handler.restrictToGlobalAddresses()
            // Without max_bytes the quota is the cap, not the handler files' larger default.
            if options["max_bytes"] == nil {
                let quota = daemon.registrationQuota
                handler.maxBytes = min(handler.maxBytes, handler.kind == .transfer ? quota.transferBytes : quota.snapshotBytes)
            }
        }
        return .success(handler)
    }

    /// Why a registration was refused: every problem, each naming its key.
    public struct Refusal: Error, Sendable, Equatable {
        /// The problems, in key order.
        public let problems: [ConfigDiagnostic]

        /// `KEY: MESSAGE`, one problem a line, as a caller reads them.
        public var message: String {
            problems.map { problem in problem.key.map { "\($0): \(problem.message)" } ?? problem.message }
                .joined(separator: "\n")
        }
    }

    /// The options as the state database keeps them: JSON, keys sorted. Read back with
    /// `options(stored:)` at every start, so what was accepted must read back the same.
    public var storedOptions: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(options)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Options kept as `storedOptions` wrote them; nil when they cannot be read.
    public static func options(stored: String) -> [String: Value]? {
        try? JSONDecoder().decode([String: Value].self, from: Data(stored.utf8))
    }

    /// Where problems of a registration say they come from.
    public static let source = "D-Bus registration"

    /// The options as the TOML table a handler file would hold (with the name).
    private func tomlTable() -> TOMLTable {
        let table = TOMLTable()
        table["name"] = name.base
        for (key, value) in options {
            switch value {
            case .bool(let value): table[key] = value
            case .integer(let value): table[key] = Int(value)
            case .double(let value): table[key] = value
            case .string(let value): table[key] = value
            case .strings(let values): table[key] = TOMLArray(values)
            case .table(let map):
                let inner = TOMLTable()
                for (name, value) in map { inner[name] = value }
                table[key] = inner
            }
        }
        return table
    }
}
