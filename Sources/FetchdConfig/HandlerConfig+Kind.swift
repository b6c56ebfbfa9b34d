import FetchdCore

extension HandlerConfig {
    /// What runs the fetch.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// An HTTP(S) GET through libcurl; the body becomes the snapshot.
        case http
        /// A program that writes its snapshot to `$FETCHD_OUTPUT` and reports by exit status.
        case exec
        /// A large HTTP(S) download outside the fetch deadline, resumed with range requests.
        case transfer
    }

    /// What runs the fetch, with the keys of that kind only.
    public enum Options: Sendable, Equatable {
        /// An HTTP(S) GET.
        case http(HTTPOptions)
        /// A program.
        case exec(ExecOptions)
        /// A background transfer.
        case transfer(TransferOptions)
    }

    /// What runs the fetch.
    public var kind: Kind {
        switch options {
        case .http: .http
        case .exec: .exec
        case .transfer: .transfer
        }
    }

    /// The request of a handler that speaks HTTP (`http`, and a `transfer`'s download); nil
    /// for `exec`.
    public var request: HTTPOptions? {
        switch options {
        case .http(let request): request
        case .transfer(let transfer): transfer.request
        case .exec: nil
        }
    }

    /// An `exec` handler's program; nil for the other kinds.
    public var program: ExecOptions? {
        if case .exec(let program) = options { program } else { nil }
    }

    /// A `transfer` handler's download; nil for the other kinds.
    public var transfer: TransferOptions? {
        if case .transfer(let transfer) = options { transfer } else { nil }
    }

    /// Whether the schedule honours the server's Retry-After, Cache-Control max-age and Expires
    /// (`honor_server_hints`; a program's fetch reports none).
    public var honorsServerHints: Bool { request?.honorServerHints ?? true }

    /// The account the fetch's program runs as; nil: fetchd's own user.
    public var user: UserAccount? { program?.user }

    /// Reads the keys of the handler's `kind` into its options; nil when they are not usable
    /// (the problems are in `reader`). The keys of other kinds are reported.
    static func readOptions(of kind: Kind, from reader: inout TableReader) -> Options? {
        for (key, owner) in HandlerKeys.foreign(to: kind) where reader.table[key] != nil {
            reader.report(key, "\"\(key)\" belongs to \(owner) handlers; this one is \(kind.rawValue)")
        }
        switch kind {
        case .http:
            return HTTPOptions.read(from: &reader, kind: .http).map(Options.http)
        case .exec:
            return ExecOptions.read(from: &reader).map(Options.exec)
        case .transfer:
            for (key, reason) in HandlerKeys.refusedByTransfers.sorted(by: { $0.key < $1.key }) where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" does not apply to transfers: \(reason)")
            }
            if reader.table["deadline"] != nil {
                reader.report("deadline", "transfers are not bound by a fetch deadline; use \"stall_timeout\" to end a stalled one")
            }
            return TransferOptions.read(from: &reader).map(Options.transfer)
        }
    }
}
