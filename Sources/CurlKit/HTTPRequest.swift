/// Everything one HTTP fetch needs; plain Swift values, no libcurl types.
public struct HTTPRequest: Sendable {
    /// The URL to GET.
    public var url: String
    /// Where the response body is written (created 0644 less the umask, or truncated; a
    /// symlink there is refused).
    public var outputPath: String
    /// Extra request headers, `Name: value`.
    public var headers: [String] = []
    /// The User-Agent header.
    public var userAgent: String
    /// The whole transfer's time limit, in milliseconds (the handler's remaining deadline);
    /// nil: no limit (background transfers, which end only when stalled).
    public var timeoutMilliseconds: Int?
    /// When the transfer ends, on the monotonic clock, with `.timeout` (the driver watches it;
    /// nil: only `timeoutMilliseconds`). A fetch's deadline, kept to the millisecond: libcurl's
    /// own limit counts from the moment libcurl starts the transfer, which for a second
    /// transfer to a busy host is about 200 ms after it was added.
    public var deadline: ContinuousClock.Instant?
    /// The largest decoded body accepted, in bytes; the transfer stops as soon as it is exceeded.
    public var maxBytes: Int
    /// Whether `file://` URLs may be read (never on redirects).
    public var allowFileURLs: Bool = false
    /// Whether every connection must go to a global address (never loopback, private,
    /// link-local, shared or unspecified): the request is made for someone who could not reach
    /// those addresses from fetchd's machine (a handler an application registered).
    public var globalAddressesOnly = false
    /// How many redirects are followed.
    public var maxRedirects: Int = 10
    /// Sent as `If-None-Match` (the ETag of the content we already have).
    public var ifNoneMatch: String?
    /// Sent as `If-Modified-Since` (the Last-Modified of the content we already have).
    public var ifModifiedSince: String?
    /// Whether the request is conditional: it carries a validator that is sent (one holding
    /// a control character is not: `ResponseHeaders.isFieldValue`).
    public var isConditional: Bool {
        [ifNoneMatch, ifModifiedSince].contains { $0.map { ResponseHeaders.isFieldValue($0.utf8) } ?? false }
    }
    /// A PEM file of CA certificates to trust instead of the system's.
    public var caFile: String?
    /// A proxy URL; nil leaves libcurl's environment handling (`https_proxy`, `no_proxy`) in place.
    public var proxy: String?
    /// The Accept-Encoding offered: "" offers every encoding libcurl can decode.
    public var acceptEncoding: String = ""
    /// A transfer slower than this many bytes per second ...
    public var lowSpeedBytesPerSecond: Int = 1
    /// ... for this many seconds is ended as stalled.
    public var lowSpeedSeconds: Int = 30
    /// Set for a resumable download (background transfers); nil: a plain GET into a truncated file.
    public var resume: Resume?
    /// The most body bytes per second received (0: no limit).
    public var maxReceiveBytesPerSecond: Int = 0
    /// Whether the body is hashed (SHA-256) while it is written (`HTTPResponse.bodySHA256`): the
    /// snapshot's digest without reading the file again. Not for resumable downloads.
    public var hashBody = false
    /// The output file, opened by `HTTPClient.fetch` on the caller's thread (-1 until then).
    var outputDescriptor: Int32 = -1
    /// libcurl's receive buffer, in bytes (nil: libcurl's default, 16 KiB); bulk downloads go
    /// faster with fewer, larger writes.
    public var receiveBufferBytes: Int?

    /// How a resumable download continues a partial file.
    ///
    /// The body of a `206` whose `Content-Range` starts at `offset` is appended there; a `200`
    /// (the server ignores ranges, or `If-Range` found the resource changed) truncates the file
    /// and starts again from byte 0; the body of any other status is discarded, so an error page
    /// never lands in the partial file. Content coding is not offered: ranges count the bytes
    /// of the resource as stored.
    public struct Resume: Sendable, Equatable {
        /// Bytes already in the output file; 0 starts from scratch (no `Range` header).
        public var offset: Int
        /// Sent as `If-Range`: the validator of the resource the partial file came from.
        public var validator: String?
        /// Watches the download; its `bytesOnDisk` starts at `offset`.
        public var progress: TransferProgress?

        /// Creates a resume point.
        public init(offset: Int, validator: String?, progress: TransferProgress?) {
            self.offset = offset
            self.validator = validator
            self.progress = progress
        }

        /// Equal when offset and validator are (the progress object is not compared).
        public static func == (lhs: Resume, rhs: Resume) -> Bool {
            lhs.offset == rhs.offset && lhs.validator == rhs.validator
        }
    }

    /// Creates a request.
    public init(url: String, outputPath: String, userAgent: String, timeoutMilliseconds: Int?, maxBytes: Int) {
        self.url = url
        self.outputPath = outputPath
        self.userAgent = userAgent
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxBytes = maxBytes
    }
}

/// What came back from a completed transfer.
public struct HTTPResponse: Sendable, Equatable {
    /// The HTTP status (200 for `file://`).
    public var status: Int
    /// The URL after redirects.
    public var effectiveURL: String
    /// The Content-Type header, if any.
    public var contentType: String?
    /// Response headers of the final response, names lower-cased.
    public var headers: [String: String]
    /// Decoded body bytes written.
    public var bodyBytes: Int
    /// Total transfer time, in milliseconds.
    public var totalMilliseconds: Int
    /// Phases of the transfer, in milliseconds from its start (`curl_easy_getinfo`):
    /// `name_lookup`, `connect`, `tls`, `first_byte`, `total`.
    public var timings: [String: Int] = [:]
    /// The HTTP version the response came in ("1.1", "2"), nil for `file://`.
    public var httpVersion: String?
    /// For a resumable download: where the final response's body started in the file (the
    /// resume offset after a 206, 0 after a 200), nil when no body was written.
    public var bodyOffset: Int?
    /// For a resumable download: the resource's whole size, when the server said.
    public var totalBytes: Int?
    /// With `HTTPRequest.hashBody`: the SHA-256 of the `bodyBytes` written (32 bytes; an empty
    /// body has the digest of nothing), whatever the status; nil when the request did not ask
    /// or resumes a download.
    public var bodySHA256: [UInt8]?
}

/// Why a transfer failed, precisely enough for a person to act on.
public enum HTTPFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host name could not be resolved.
    case dns(String)
    /// The TCP connection could not be made.
    case connect(String)
    /// TLS failed (handshake or certificate verification).
    case tls(String)
    /// The time limit passed or the transfer stalled.
    case timeout(String)
    /// The body exceeded the byte limit.
    case tooLarge(limit: Int)
    /// The response headers exceeded the header limit (a hostile or broken server).
    case headersTooLarge(limit: Int)
    /// One response header line exceeded what libcurl buffers of a line (a hostile or broken server).
    case headerLineTooLarge(limit: Int)
    /// More redirects than allowed.
    case tooManyRedirects(limit: Int)
    /// The URL or a redirect used a scheme that is not allowed.
    case forbiddenScheme(String)
    /// A redirect led where `RedirectPolicy` forbids (an internal address, https to http).
    case forbiddenRedirect(String)
    /// The URL's own host connected to an address the request may not reach
    /// (`globalAddressesOnly`).
    case forbiddenAddress(String)
    /// The transfer was cancelled (deadline or shutdown).
    case cancelled
    /// The connection ended before the whole response arrived.
    case incomplete(String)
    /// A resumed download's response does not continue the partial file where it ends; start again.
    case rangeMismatch(String)
    /// Writing the body to disk failed.
    case write(String)
    /// Any other libcurl error, with its code.
    case other(code: Int, message: String)

    /// A one-line reason for logs and status.
    public var description: String {
        switch self {
        case .dns(let detail): "DNS: \(detail)"
        case .connect(let detail): "connect: \(detail)"
        case .tls(let detail): "TLS: \(detail)"
        case .timeout(let detail): "timeout: \(detail)"
        case .tooLarge(let limit): "too large: the body exceeds max_bytes (\(limit) bytes)"
        case .headersTooLarge(let limit): "too large: the response headers exceed \(limit) bytes"
        case .headerLineTooLarge(let limit): "too large: a response header line exceeds \(limit) bytes"
        case .tooManyRedirects(let limit): "too many redirects (more than \(limit))"
        case .forbiddenScheme(let detail): "forbidden scheme: \(detail)"
        case .forbiddenRedirect(let detail): "forbidden redirect: \(detail)"
        case .forbiddenAddress(let detail): "forbidden address: \(detail)"
        case .cancelled: "cancelled"
        case .incomplete(let detail): "incomplete response: \(detail)"
        case .rangeMismatch(let detail): "the server's range does not continue the partial file: \(detail)"
        case .write(let detail): "write: \(detail)"
        case .other(let code, let message): "curl error \(code): \(message)"
        }
    }
}
