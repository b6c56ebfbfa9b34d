/// The keys of a `[[handler]]` table, and which kinds of handler take them.
enum HandlerKeys {
    /// Every key a `[[handler]]` table may hold.
    static let known = [
        "name", "kind", "url", "command", "environment", "user", "min_interval", "deadline", "retain",
        "max_bytes", "enabled", "allow_file_urls", "honor_server_hints", "headers", "user_agent", "accept_encoding", "proxy", "ca_file",
        "usage", "budget", "max_staleness", "lead", "push_limit", "push_token_file",
        "network", "power", "battery_min", "power_saver", "on_failure", "alert_after",
    ] + transferOnly

    /// Keys only `exec` handlers take.
    static let execOnly = ["command", "user"]

    /// Keys only `http` handlers take.
    static let httpOnly = ["url", "allow_file_urls", "honor_server_hints", "headers", "user_agent", "accept_encoding", "proxy", "ca_file"]

    /// Keys only `transfer` handlers take.
    static let transferOnly = ["sha256", "max_bytes_per_second", "stall_timeout", "on_complete"]

    /// Keys of http handlers that a transfer does not take, with the reason given to the user.
    static let refusedByTransfers = [
        "allow_file_urls": "transfers resume with HTTP range requests; file:// has none",
        "accept_encoding": "transfers resume by byte ranges of the stored resource, so they ask for no content coding",
    ]

    /// The keys a handler of `kind` does not take, each with the kind that does, in the order
    /// they are reported. Made once per kind: every handler read asks.
    static func foreign(to kind: HandlerConfig.Kind) -> [(key: String, owner: String)] {
        switch kind {
        case .http: foreignToHTTP
        case .exec: foreignToExec
        case .transfer: foreignToTransfer
        }
    }

    private static let exec = execOnly.map { (key: $0, owner: "exec") }
    private static let foreignToHTTP = exec + transferOnly.map { (key: $0, owner: "transfer") }
    private static let foreignToExec = httpOnly.map { (key: $0, owner: "http") } + transferOnly.map { (key: $0, owner: "transfer") }
    private static let foreignToTransfer = exec
}
