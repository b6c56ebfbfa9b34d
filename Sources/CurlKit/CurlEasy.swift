import CCurlShim
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One libcurl easy handle, owned by this object and freed in `deinit`.
///
/// A handle carries one transfer at a time: `prepare` sets it up for a request, the multi
/// handle drives it, and `finish` (or `abandon`) turns the outcome into a response and
/// releases the transfer's resources. Handles are reused: libcurl keeps their buffers.
/// Only the `HTTPClient` driver thread touches a handle.
final class CurlEasy {
    /// The C handle, for `curl_multi_add_handle` and friends.
    let handle: UnsafeMutableRawPointer
    private var transfer: TransferState?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The conditional headers alone: what is sent once a redirect changes the host.
    private var crossHostHeaderList: UnsafeMutablePointer<curl_slist>?
    /// Named proxies pinned to the addresses fetchd resolved (`routeThroughProxies`).
    var proxyResolveList: UnsafeMutablePointer<curl_slist>?
    /// A global-only transfer's host pinned to its checked address (`routeThroughProxies`).
    var connectToList: UnsafeMutablePointer<curl_slist>?
    /// What the open-socket callback asks, at a fixed address for as long as the handle lives:
    /// libcurl keeps the pointer (CURLOPT_OPENSOCKETDATA).
    private let socketGate: UnsafeMutablePointer<fetchd_curl_socket_gate>

    /// libcurl's global state must be set up once, before any handle exists.
    static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// The most response-header bytes accepted over a transfer and its redirects: a server that
    /// sends headers without end must not grow the daemon's memory.
    static let maxHeaderBytes = 256 * 1024
    /// The longest response header line libcurl takes (CURL_MAX_HTTP_HEADER, 100 KiB): a longer
    /// one ends the transfer as "out of memory", libcurl saying nothing more.
    static let maxHeaderLineBytes = 100 * 1024

    /// Creates a handle; fails only when libcurl cannot allocate one.
    init() throws(HTTPFailure) {
        guard Self.globalInit, let handle = curl_easy_init() else {
            throw .other(code: -1, message: "libcurl could not be initialised")
        }
        self.handle = handle
        socketGate = .allocate(capacity: 1)
        socketGate.initialize(to: fetchd_curl_socket_gate(admit: nil, userdata: nil))
    }

    deinit {
        abandon()
        curl_easy_cleanup(handle)
        socketGate.deallocate()
    }

    /// Sets the handle up for `request`, whose output file the caller has opened (`openOutput`),
    /// and sets every option. `share` carries the TLS session and DNS caches that all transfers use.
    func prepare(_ request: HTTPRequest, share: UnsafeMutableRawPointer) throws(HTTPFailure) {
        abandon()
        curl_easy_reset(handle)
        guard request.outputDescriptor >= 0 else { throw .write("\(request.outputPath): the output file is not open") }
        let state = TransferState(fd: request.outputDescriptor, maxBytes: request.maxBytes, resume: request.resume)
        if request.hashBody && request.resume == nil { state.hasher = SHA256() }
        transfer = state
        // Validators come from earlier responses, through the state database: one that would
        // carry a control character into the request (a second header after a bare CR) is not
        // sent, and the request is the less conditional for it.
        var conditional: [String] = []
        let sendable: (String?) -> String? = { $0.flatMap { ResponseHeaders.isFieldValue($0.utf8) ? $0 : nil } }
        if let etag = sendable(request.ifNoneMatch) { conditional.append("If-None-Match: \(etag)") }
        if let date = sendable(request.ifModifiedSince) { conditional.append("If-Modified-Since: \(date)") }
        if let resume = request.resume, resume.offset > 0, let validator = sendable(resume.validator) {
            conditional.append("If-Range: \(validator)")
        }
        for header in request.headers + conditional { headerList = curl_slist_append(headerList, header) }
        // `proxy = ""` means none, not even the environment's (CURLOPT_PROXY "" turns it off).
        do throws(HTTPFailure) { state.redirects = try routeThroughProxies(request) } catch {
            abandon()
            throw error
        }
        state.handle = handle
        if !request.headers.isEmpty {
            for header in conditional { crossHostHeaderList = curl_slist_append(crossHostHeaderList, header) }
            state.crossHostHeaders = .some(crossHostHeaderList)
        }
        let userdata = Unmanaged.passUnretained(state).toOpaque()
        socketGate.pointee = fetchd_curl_socket_gate(admit: Self.admitAddress, userdata: userdata)
        let protocols = request.allowFileURLs ? "http,https,file" : "http,https"
        var setup: [CURLcode] = [
            fetchd_curl_setopt_string(handle, CURLOPT_URL, request.url),
            fetchd_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),  // no SIGALRM in a threaded daemon
            fetchd_curl_setopt_pointer(handle, CURLOPT_SHARE, share),
            fetchd_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, protocols),
            fetchd_curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
            fetchd_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1),
            fetchd_curl_setopt_long(handle, CURLOPT_MAXREDIRS, request.maxRedirects),
            fetchd_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.timeoutMilliseconds.map { max(1, $0) } ?? 0),
            fetchd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytesPerSecond),
            fetchd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, request.lowSpeedSeconds),
            fetchd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            fetchd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            // HTTP/2 over TLS when the server offers it (ALPN).
            fetchd_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS),
            fetchd_curl_setopt_long(handle, CURLOPT_PIPEWAIT, Self.waitsToMultiplex(request.url) ? 1 : 0),
            fetchd_curl_setopt_string(handle, CURLOPT_USERAGENT, request.userAgent),
            fetchd_curl_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBytes)),
            fetchd_curl_setopt_off(handle, CURLOPT_MAX_RECV_SPEED_LARGE, curl_off_t(request.maxReceiveBytesPerSecond)),
            fetchd_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList)),
            fetchd_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, userdata),
            fetchd_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, userdata),
            fetchd_curl_set_write_callback(handle, Self.writeBody),
            fetchd_curl_set_header_callback(handle, Self.readHeader),
            fetchd_curl_set_prereq_callback(handle, Self.checkConnection, userdata),
            // fetchd opens libcurl's sockets: close-on-exec (a child started by anything else in
            // the process would hold a connection open after libcurl closed it, a cancelled
            // download kept flowing into its socket, unread), and only to an address the
            // redirect policy admits, so a refused one never sees a SYN.
            fetchd_curl_set_open_socket_gate(handle, socketGate),
        ]
        if let resume = request.resume {
            // Ranges count stored bytes, so a resumable download asks for no content coding.
            if resume.offset > 0 { setup.append(fetchd_curl_setopt_string(handle, CURLOPT_RANGE, "\(resume.offset)-")) }
        } else {
            // An empty string asks for every encoding libcurl can decode; the limit counts decoded bytes.
            setup.append(fetchd_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, request.acceptEncoding))
        }
        if let bytes = request.receiveBufferBytes { setup.append(fetchd_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, bytes)) }
        if let caFile = request.caFile { setup.append(fetchd_curl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
        if let proxy = request.proxy { setup.append(fetchd_curl_setopt_string(handle, CURLOPT_PROXY, proxy)) }
        if let bad = setup.first(where: { $0 != CURLE_OK }) {
            abandon()
            throw .other(code: Int(bad.rawValue), message: String(cString: curl_easy_strerror(bad)))
        }
    }

    /// Whether a transfer of `url` waits for a connection to the same host still being set up,
    /// to learn whether it can share it (CURLOPT_PIPEWAIT), rather than opening one of its own.
    /// Only over https, where ALPN may give HTTP/2 once the handshake ends: plain http is
    /// HTTP/1.1 here, which never multiplexes, and libcurl learns that only from the first
    /// response, then moves one waiting transfer on per transfer that ends, so every fetch of a
    /// slow host would go through one connection in turn, its deadline running meanwhile.
    static func waitsToMultiplex(_ url: String) -> Bool {
        url.utf8.count > 8 && url.prefix(8).lowercased() == "https://"
    }

    /// Opens `request`'s output file for writing. Called by `HTTPClient.fetch` on the caller's
    /// thread, which closes it once the transfer has ended: creating the file was among the
    /// costliest things the one driver thread did per transfer.
    static func openOutput(of request: HTTPRequest) throws(HTTPFailure) -> Int32 {
        // A resumable download keeps what the file holds; the first body byte decides its fate.
        let truncate = request.resume == nil ? O_TRUNC : 0
        // 0644 less the umask, as `curl -o` makes files: fetchd's output folders are its own and
        // closed to others (.staging, .transfer are 0700), and a snapshot ends up 0644 anyway;
        // made so at once, publishing it needs no chmod.
        let fd = open(request.outputPath, O_WRONLY | O_CREAT | truncate | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw .write("\(request.outputPath): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Releases the current transfer's header list and forgets its file (after `finish`, or when
    /// cancelled); the file is the caller's to close.
    func abandon() {
        transfer = nil
        // The gate's userdata was the transfer's state, gone now.
        socketGate.pointee = fetchd_curl_socket_gate(admit: nil, userdata: nil)
        curl_slist_free_all(headerList)
        headerList = nil
        curl_slist_free_all(crossHostHeaderList)
        crossHostHeaderList = nil
        curl_slist_free_all(proxyResolveList)
        proxyResolveList = nil
        curl_slist_free_all(connectToList)
        connectToList = nil
    }

    /// The outcome of the transfer that ended with `code`; releases the transfer.
    func finish(code: CURLcode, request: HTTPRequest) -> Result<HTTPResponse, HTTPFailure> {
        defer { abandon() }
        guard let state = transfer else { return .failure(.other(code: -1, message: "no transfer was prepared")) }
        if code != CURLE_OK { return .failure(failure(for: code, state: state, request: request)) }
        var status = 0
        _ = fetchd_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var timings = [String: Int](minimumCapacity: 5)
        for (name, info) in [("name_lookup", CURLINFO_NAMELOOKUP_TIME_T), ("connect", CURLINFO_CONNECT_TIME_T),
                             ("tls", CURLINFO_APPCONNECT_TIME_T), ("first_byte", CURLINFO_STARTTRANSFER_TIME_T),
                             ("total", CURLINFO_TOTAL_TIME_T)] {
            var microseconds: curl_off_t = 0
            if fetchd_curl_getinfo_off(handle, info, &microseconds) == CURLE_OK { timings[name] = Int(microseconds / 1000) }
        }
        var httpVersion = 0
        _ = fetchd_curl_getinfo_long(handle, CURLINFO_HTTP_VERSION, &httpVersion)
        if state.resume != nil, !state.bodyStarted, (200..<300).contains(status), status != 206 {
            // A whole resource with an empty body: the file must not keep an older partial.
            _ = state.startBody(status: status)
        }
        return .success(HTTPResponse(
            status: status == 0 ? 200 : status,  // file:// has no status line
            effectiveURL: infoString(CURLINFO_EFFECTIVE_URL) ?? request.url,
            contentType: infoString(CURLINFO_CONTENT_TYPE),
            headers: state.headers,
            bodyBytes: state.bytes,
            totalMilliseconds: timings["total"] ?? 0,
            timings: timings,
            httpVersion: Self.versionName(httpVersion),
            bodyOffset: state.bodyStarted && !state.discarding ? state.base : nil,
            totalBytes: state.totalBytes,
            bodySHA256: state.hasher.map { Array($0.finalize()) }))
    }

    private static func versionName(_ version: Int) -> String? {
        switch version {
        case CURL_HTTP_VERSION_1_0: "1.0"
        case CURL_HTTP_VERSION_1_1: "1.1"
        case CURL_HTTP_VERSION_2_0: "2"
        case CURL_HTTP_VERSION_3: "3"
        default: nil
        }
    }

    /// Whether the transfer sent a request (so that what failed came after it).
    private func requestWasSent() -> Bool {
        var bytes = 0
        return fetchd_curl_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &bytes) == CURLE_OK && bytes > 0
    }

    private func infoString(_ info: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard fetchd_curl_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Maps a libcurl error to a reason a person can act on.
    private func failure(for code: CURLcode, state: TransferState, request: HTTPRequest) -> HTTPFailure {
        let message = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_WRITE_ERROR where state.exceeded, CURLE_FILESIZE_EXCEEDED:
            return .tooLarge(limit: request.maxBytes)
        case CURLE_WRITE_ERROR where state.headersExceeded:
            return .headersTooLarge(limit: Self.maxHeaderBytes)
        // Out of memory while the response's headers are read (the request sent, no body byte
        // yet): a header line longer than libcurl buffers, which is the server's doing.
        case CURLE_OUT_OF_MEMORY where !state.bodyStarted && requestWasSent():
            return .headerLineTooLarge(limit: Self.maxHeaderLineBytes)
        case CURLE_WRITE_ERROR where state.writeErrno != 0:
            return .write(String(cString: strerror(state.writeErrno)))
        case CURLE_WRITE_ERROR where state.rangeProblem != nil:
            return .rangeMismatch(state.rangeProblem ?? "")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .dns(message)
        // The policy refused the address before a socket was opened (libcurl saw a connection it
        // could not make).
        case CURLE_COULDNT_CONNECT where state.refusal != nil:
            return state.refusal ?? .connect(message)
        case CURLE_COULDNT_CONNECT: return .connect(message)
        case CURLE_OPERATION_TIMEDOUT: return .timeout(message)
        case CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects(limit: request.maxRedirects)
        case CURLE_UNSUPPORTED_PROTOCOL: return .forbiddenScheme(message)
        case CURLE_ABORTED_BY_CALLBACK where state.refusal != nil:
            return state.refusal ?? .forbiddenRedirect("")
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING: return .incomplete(message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER:
            return .tls(message)
        default: return .other(code: Int(code.rawValue), message: message)
        }
    }
}
