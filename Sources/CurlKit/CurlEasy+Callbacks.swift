import CCurlShim
import Crypto

#if canImport(Glibc)
import Glibc
#endif

extension CurlEasy {
    /// Per-transfer data that the C callbacks reach through their userdata pointer. Touched only
    /// on the driver thread.
    final class TransferState {
        let fd: Int32
        let maxBytes: Int
        /// Set for a resumable download (see `HTTPRequest.Resume`).
        let resume: HTTPRequest.Resume?
        /// Body bytes written by this transfer (after `base`).
        var bytes = 0
        var exceeded = false
        var headerBytes = 0
        var headersExceeded = false
        var writeErrno: Int32 = 0
        /// Sized for a usual response's headers, so that reading them does not rehash it as it grows.
        var headers = [String: String](minimumCapacity: 16)
        /// The status of the response whose headers are being read (the last one wins).
        var status = 0
        /// Whether the final response's body has begun (its first byte arrived, or it ended empty).
        var bodyStarted = false
        /// The body belongs to an error response of a resumable download: counted, not written.
        var discarding = false
        /// The file offset the body is written from.
        var base = 0
        /// The resource's whole size, from Content-Range or Content-Length.
        var totalBytes: Int?
        /// Why a 206 could not continue the file, when it could not.
        var rangeProblem: String?
        /// Hashes every body byte written (`HTTPRequest.hashBody`).
        var hasher: SHA256?
        /// Where redirects may lead.
        var redirects: RedirectPolicy?
        /// Why the policy refused a connection, when it did.
        var forbiddenRedirect: String?
        /// The easy handle this transfer runs on, for the pre-request callback.
        var handle: UnsafeMutableRawPointer?
        /// When the request has custom headers: the header list to switch to once a redirect
        /// changes the host (the conditional headers only; nil when there are none).
        var crossHostHeaders: UnsafeMutablePointer<curl_slist>??

        init(fd: Int32, maxBytes: Int, resume: HTTPRequest.Resume?) {
            self.fd = fd
            self.maxBytes = maxBytes
            self.resume = resume
        }

        /// Decides where the final response's body goes (resumable downloads only): appended at
        /// the resume offset for a 206 that continues the file, from byte 0 for another 2xx,
        /// nowhere for an error. Returns false when the body must not be accepted at all.
        func startBody(status: Int) -> Bool {
            bodyStarted = true
            guard let resume else { return true }
            let range = headers["content-range"].flatMap(Self.parseContentRange)
            switch status {
            case 206:
                guard let range, range.start == resume.offset else {
                    rangeProblem = "asked for bytes from \(resume.offset), got \(headers["content-range"] ?? "no Content-Range")"
                    return false
                }
                base = range.start
                totalBytes = range.total
            case 200..<300:
                base = 0
                totalBytes = headers["content-length"].flatMap { Int($0) }
                resume.progress?.restarting()
            default:
                discarding = true
                return true
            }
            // Drop anything past the resume point (none, unless the file grew behind our back).
            guard ftruncate(fd, off_t(base)) == 0, lseek(fd, off_t(base), SEEK_SET) >= 0 else {
                writeErrno = errno
                return false
            }
            resume.progress?.wrote(upTo: base)
            resume.progress?.started(TransferProgress.BodyStart(
                status: status, offset: base, totalBytes: totalBytes, validator: validator,
                contentType: headers["content-type"]))
            return true
        }

        /// A validator `If-Range` may carry: a strong ETag (RFC 9110 forbids weak ones), else
        /// Last-Modified.
        private var validator: String? {
            if let etag = headers["etag"], !etag.hasPrefix("W/") { return etag }
            return headers["last-modified"]
        }

        /// `bytes START-END/TOTAL` (TOTAL may be `*`).
        static func parseContentRange(_ text: String) -> (start: Int, total: Int?)? {
            guard text.hasPrefix("bytes ") else { return nil }
            let spec = text.dropFirst(6)
            guard let dash = spec.firstIndex(of: "-"), let slash = spec.firstIndex(of: "/"),
                  let start = Int(spec[..<dash]) else { return nil }
            return (start, Int(spec[spec.index(after: slash)...]))
        }
    }

    /// Writes body bytes to the output file, stopping as soon as the limit would be passed.
    static let writeBody: fetchd_curl_data_callback = { data, size, count, userdata in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        let length = size * count
        if !state.bodyStarted, !state.startBody(status: state.status) { return 0 }
        if state.discarding {
            // An error page of a resumable download: bounded like any body, never written.
            state.bytes += length
            return state.bytes <= state.maxBytes ? length : 0
        }
        guard state.base + state.bytes + length <= state.maxBytes else { state.exceeded = true; return 0 }
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
        state.hasher?.update(bufferPointer: UnsafeRawBufferPointer(start: data, count: length))
        state.resume?.progress?.wrote(upTo: state.base + state.bytes)
        return length
    }

    /// Applies `RedirectPolicy` to each connection, before its request is sent. Switching the
    /// header list here takes effect for the request about to be made: libcurl builds it from the
    /// handle's options after this callback returns.
    static let checkConnection: fetchd_curl_prereq_callback = { userdata, primaryIP, _, _, _ in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        guard state.redirects != nil, let primaryIP, let handle = state.handle else { return CURL_PREREQFUNC_OK }
        let verdict = state.redirects!.check(connectedAddress: String(cString: primaryIP)) {
            var url: UnsafePointer<CChar>?
            guard fetchd_curl_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url else { return nil }
            return String(cString: url)
        }
        switch verdict {
        case .allow:
            return CURL_PREREQFUNC_OK
        case .allowWithoutCustomHeaders:
            if let list = state.crossHostHeaders {
                guard fetchd_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)) == CURLE_OK else {
                    state.forbiddenRedirect = "the custom headers could not be dropped for another host"
                    return CURL_PREREQFUNC_ABORT
                }
            }
            return CURL_PREREQFUNC_OK
        case .refuse(let why):
            state.forbiddenRedirect = why
            return CURL_PREREQFUNC_ABORT
        }
    }

    /// Keeps the final response's headers, names lower-cased, within `maxHeaderBytes`.
    static let readHeader: fetchd_curl_data_callback = { data, size, count, userdata in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        let length = size * count
        state.headerBytes += length
        guard state.headerBytes <= CurlEasy.maxHeaderBytes else { state.headersExceeded = true; return 0 }
        // Bytes, not Foundation's trimming: this runs for every header line of every fetch.
        let line = UnsafeRawBufferPointer(start: data, count: length)
        if line.starts(with: "HTTP/".utf8) {
            state.headers.removeAll(keepingCapacity: true)  // a new response (after a redirect or 100-continue) starts afresh
            state.status = statusCode(of: line)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0d || $0 == 0x0a }
            var start = colon + 1, end = length
            while start < end, isSpace(line[start]) { start += 1 }
            while end > start, isSpace(line[end - 1]) { end -= 1 }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            state.headers[name] = String(decoding: line[start..<end], as: UTF8.self)
        }
        return length
    }

    /// The three digits after the first space of a status line (0 when there are none).
    private static func statusCode(of line: UnsafeRawBufferPointer) -> Int {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")), space + 3 < line.count else { return 0 }
        var code = 0
        for byte in line[(space + 1)...(space + 3)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return 0 }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return code
    }
}
