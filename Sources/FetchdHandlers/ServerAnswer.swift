import FetchdCore
import Foundation

/// What a server said beside the content: the validators of the content in hand and how long it
/// asks to be left alone. The http handler reports it (`FetchContext.reportServerAnswer`), a
/// transfer returns it with its outcome; settling records it (the validators with the handler's
/// state, the delay as its next fetch's floor) and writes it into the snapshot's metadata.
public struct ServerAnswer: Sendable, Equatable {
    /// The validators of the content now in hand (a 2xx response; absent ones clear stale ones),
    /// nil when no content came.
    public var validators: HTTPValidators?
    /// The floor the server asked for, in seconds (`ServerHints.delaySeconds`), if any.
    public var delaySeconds: Double?

    /// An answer with the given parts.
    public init(validators: HTTPValidators? = nil, delaySeconds: Double? = nil) {
        self.validators = validators
        self.delaySeconds = delaySeconds
    }

    /// What a response with `status` and `headers` (lower-case names) says.
    public init(status: Int, headers: [String: String], now: Date = Date()) {
        delaySeconds = ServerHints.delaySeconds(status: status, headers: headers, now: now)
        if (200..<300).contains(status) { validators = Self.validators(in: headers) }
    }

    /// The validators `headers` (lower-case names) carry; absent or empty ones are nil.
    public static func validators(in headers: [String: String]) -> HTTPValidators {
        let present = { (name: String) in headers[name].flatMap { $0.isEmpty ? nil : $0 } }
        return HTTPValidators(etag: present("etag"), lastModified: present("last-modified"))
    }

    /// The entries of a snapshot's `details` (its meta.json, fetchd-snapshots(7)) that say it: `etag` and
    /// `last_modified` (empty when the server sent none) and `server_delay_s`.
    public var metadataDetails: [String: String] {
        var details: [String: String] = [:]
        if let validators {
            details["etag"] = validators.etag ?? ""
            details["last_modified"] = validators.lastModified ?? ""
        }
        if let delaySeconds { details["server_delay_s"] = String(delaySeconds) }
        return details
    }
}
