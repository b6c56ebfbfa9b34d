import FetchdCore

/// A `transfer` handler's download: a large file fetched outside the fetch deadline, resumed
/// with range requests, checked and handed to a program when it is new.
public struct TransferOptions: Sendable, Equatable {
    /// The request (no `accept_encoding`, no `file://`: a transfer resumes by byte ranges).
    public var request: HTTPOptions
    /// The file's expected SHA-256 (lower-case hex); a file that does not match is refused.
    public var sha256: String?
    /// At most this many bytes per second (0: only the global limit).
    public var maxBytesPerSecond = 0
    /// A transfer that receives nothing for this long is interrupted, to resume later, in seconds.
    public var stallSeconds = Defaults.transferStallSeconds
    /// The argv run with the finished file's path appended when the transfer brings new data.
    public var onComplete: [String]?

    /// A download of `request`, every other option at its default.
    public init(request: HTTPOptions) {
        self.request = request
    }

    /// Reads a transfer handler's keys; nil when there is no usable `url` (the problem is in
    /// `reader`).
    static func read(from reader: inout TableReader) -> TransferOptions? {
        let request = HTTPOptions.read(from: &reader, kind: .transfer)
        var options = TransferOptions(request: request ?? HTTPOptions(url: ""))
        if let digest = reader.string("sha256") {
            let lower = digest.lowercased()
            if lower.count == 64, lower.allSatisfy(\.isHexDigit) {
                options.sha256 = lower
            } else {
                reader.report("sha256", "\"\(digest)\" is not a SHA-256 digest; expected 64 hexadecimal digits")
            }
        }
        if let rate = reader.int("max_bytes_per_second", in: 0...Int.max) { options.maxBytesPerSecond = rate }
        if let seconds = reader.durationSeconds("stall_timeout", in: 1...86_400) { options.stallSeconds = seconds }
        if let command = reader.stringArray("on_complete", example: HandlerConfig.commandExample) {
            if command.first?.isEmpty ?? true {
                reader.report("on_complete", "the program (first element) is missing; expected an argv such as [\"/usr/bin/prog\"]")
            } else {
                options.onComplete = command
            }
        }
        return request == nil ? nil : options
    }
}
