import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One libcurl easy handle, owned by this object and freed in `deinit`.
///
/// `perform` blocks its thread, so callers run it off Swift's cooperative pool (`HTTPClient`).
final class CurlEasy {
    private let handle: UnsafeMutableRawPointer

    /// libcurl's global state must be set up once, before any handle exists.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Creates a handle; fails only when libcurl cannot allocate one.
    init() throws(HTTPFailure) {
        guard Self.globalInit, let handle = curl_easy_init() else {
            throw .other(code: -1, message: "libcurl could not be initialised")
        }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    /// Per-transfer data that the C callbacks reach through their userdata pointer.
    private final class TransferState {
        let fd: Int32
        let maxBytes: Int
        let cancel: CancelFlag
        var bytes = 0
        var exceeded = false
        var writeErrno: Int32 = 0
        var headers: [String: String] = [:]

        init(fd: Int32, maxBytes: Int, cancel: CancelFlag) {
            self.fd = fd
            self.maxBytes = maxBytes
            self.cancel = cancel
        }
    }

    /// Runs the transfer to completion on the calling thread.
    func perform(_ request: HTTPRequest, cancel: CancelFlag) throws(HTTPFailure) -> HTTPResponse {
        let fd = open(request.outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .write("\(request.outputPath): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let state = TransferState(fd: fd, maxBytes: request.maxBytes, cancel: cancel)
        let userdata = Unmanaged.passUnretained(state).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        var headers = request.headers
        if let etag = request.ifNoneMatch { headers.append("If-None-Match: \(etag)") }
        if let date = request.ifModifiedSince { headers.append("If-Modified-Since: \(date)") }
        for header in headers { headerList = curl_slist_append(headerList, header) }
        defer { curl_slist_free_all(headerList) }

        let protocols = request.allowFileURLs ? "http,https,file" : "http,https"
        var setup: [CURLcode] = [
            fetchd_curl_setopt_string(handle, CURLOPT_URL, request.url),
            fetchd_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),  // no SIGALRM in a threaded daemon
            fetchd_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, protocols),
            fetchd_curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
            fetchd_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1),
            fetchd_curl_setopt_long(handle, CURLOPT_MAXREDIRS, request.maxRedirects),
            fetchd_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, request.timeoutMilliseconds)),
            fetchd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytesPerSecond),
            fetchd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, request.lowSpeedSeconds),
            fetchd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            fetchd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            fetchd_curl_setopt_string(handle, CURLOPT_USERAGENT, request.userAgent),
            // An empty string asks for every encoding libcurl can decode; the limit counts decoded bytes.
            fetchd_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, request.acceptEncoding),
            fetchd_curl_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBytes)),
            fetchd_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList)),
            fetchd_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, userdata),
            fetchd_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, userdata),
            fetchd_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, userdata),
        ]
        setup.append(fetchd_curl_set_write_callback(handle) { data, size, count, userdata in
            let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
            let length = size * count
            guard state.bytes + length <= state.maxBytes else { state.exceeded = true; return 0 }
            var offset = 0
            while offset < length {
                let written = write(state.fd, data! + offset, length - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    state.writeErrno = errno
                    return 0
                }
                offset += written
            }
            state.bytes += length
            return length
        })
        setup.append(fetchd_curl_set_header_callback(handle) { data, size, count, userdata in
            let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
            let length = size * count
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
            if line.hasPrefix("HTTP/") {
                state.headers = [:]  // a new response (after a redirect or 100-continue) starts afresh
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                state.headers[name] = value
            }
            return length
        })
        setup.append(fetchd_curl_set_progress_callback(handle) { userdata, _, _, _, _ in
            Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue().cancel.isCancelled ? 1 : 0
        })
        if let caFile = request.caFile { setup.append(fetchd_curl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
        if let proxy = request.proxy { setup.append(fetchd_curl_setopt_string(handle, CURLOPT_PROXY, proxy)) }
        if let bad = setup.first(where: { $0 != CURLE_OK }) {
            throw .other(code: Int(bad.rawValue), message: String(cString: curl_easy_strerror(bad)))
        }

        let code = curl_easy_perform(handle)
        if code != CURLE_OK { throw failure(for: code, state: state, request: request) }
        var status = 0
        _ = fetchd_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var timings: [String: Int] = [:]
        for (name, info) in [("name_lookup", CURLINFO_NAMELOOKUP_TIME_T), ("connect", CURLINFO_CONNECT_TIME_T),
                             ("tls", CURLINFO_APPCONNECT_TIME_T), ("first_byte", CURLINFO_STARTTRANSFER_TIME_T),
                             ("total", CURLINFO_TOTAL_TIME_T)] {
            var microseconds: curl_off_t = 0
            if fetchd_curl_getinfo_off(handle, info, &microseconds) == CURLE_OK { timings[name] = Int(microseconds / 1000) }
        }
        return HTTPResponse(
            status: status == 0 ? 200 : status,  // file:// has no status line
            effectiveURL: infoString(CURLINFO_EFFECTIVE_URL) ?? request.url,
            contentType: infoString(CURLINFO_CONTENT_TYPE),
            headers: state.headers,
            bodyBytes: state.bytes,
            totalMilliseconds: timings["total"] ?? 0,
            timings: timings)
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
        case CURLE_WRITE_ERROR where state.writeErrno != 0:
            return .write(String(cString: strerror(state.writeErrno)))
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .dns(message)
        case CURLE_COULDNT_CONNECT: return .connect(message)
        case CURLE_OPERATION_TIMEDOUT: return .timeout(message)
        case CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects(limit: request.maxRedirects)
        case CURLE_UNSUPPORTED_PROTOCOL: return .forbiddenScheme(message)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING: return .incomplete(message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER:
            return .tls(message)
        default: return .other(code: Int(code.rawValue), message: message)
        }
    }
}
