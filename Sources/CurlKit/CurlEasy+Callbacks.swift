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
        /// The status and fields of the response whose headers are being read (the last one wins).
        var response = ResponseHeaders()
        /// The response's fields, names lower-cased.
        var headers: [String: String] { response.fields }
        /// The response's status.
        var status: Int { response.status }
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
        /// The error the policy's refusal of a connection becomes, when it refused one.
        var refusal: HTTPFailure?
        /// The easy handle this transfer runs on, for the open-socket and pre-request callbacks.
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
            let range = response.contentRange
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
                totalBytes = response.contentLength
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
                status: status, offset: base, totalBytes: totalBytes, validator: response.rangeValidator,
                contentType: headers["content-type"]))
            return true
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

    /// Applies `RedirectPolicy` to each address before a socket is opened for it, so a refused
    /// one is never sent anything; libcurl then fails the attempt as a connection it could not
    /// make (`CurlEasy` reports the refusal instead). The connection that is made still goes
    /// through `checkConnection`, which also sees reused connections (no socket is opened for one).
    static let admitAddress: fetchd_curl_admit_callback = { userdata, address, port in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        guard state.redirects != nil, let address, let handle = state.handle else { return 1 }
        let verdict = state.redirects!.checkBeforeConnecting(to: String(cString: address), port: Int(port)) {
            CurlEasy.effectiveURL(of: handle)
        }
        switch verdict {
        case .allow, .allowWithoutCustomHeaders:
            return 1
        case .refuse(let why):
            state.refusal = .forbiddenRedirect(why)
            return 0
        case .refuseAddress(let why):
            state.refusal = .forbiddenAddress(why)
            return 0
        }
    }

    /// Applies `RedirectPolicy` to each connection, before its request is sent. Switching the
    /// header list here takes effect for the request about to be made: libcurl builds it from the
    /// handle's options after this callback returns.
    static let checkConnection: fetchd_curl_prereq_callback = { userdata, primaryIP, _, primaryPort, _ in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        guard state.redirects != nil, let primaryIP, let handle = state.handle else { return CURL_PREREQFUNC_OK }
        let verdict = state.redirects!.check(connectedAddress: String(cString: primaryIP), port: Int(primaryPort)) {
            CurlEasy.effectiveURL(of: handle)
        }
        switch verdict {
        case .allow:
            // An address refused before connecting was passed over for this one: no longer the
            // reason should the transfer fail later.
            state.refusal = nil
            return CURL_PREREQFUNC_OK
        case .allowWithoutCustomHeaders:
            state.refusal = nil
            if let list = state.crossHostHeaders {
                guard fetchd_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)) == CURLE_OK else {
                    state.refusal = .forbiddenRedirect("the custom headers could not be dropped for another host")
                    return CURL_PREREQFUNC_ABORT
                }
            }
            return CURL_PREREQFUNC_OK
        case .refuse(let why):
            state.refusal = .forbiddenRedirect(why)
            return CURL_PREREQFUNC_ABORT
        case .refuseAddress(let why):
            state.refusal = .forbiddenAddress(why)
            return CURL_PREREQFUNC_ABORT
        }
    }

    /// The URL the handle is working on: the configured one, then each redirect's, set before
    /// libcurl connects for it.
    private static func effectiveURL(of handle: UnsafeMutableRawPointer) -> String? {
        var url: UnsafePointer<CChar>?
        guard fetchd_curl_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url else { return nil }
        return String(cString: url)
    }

    /// Keeps the final response's headers, names lower-cased, within `maxHeaderBytes`.
    static let readHeader: fetchd_curl_data_callback = { data, size, count, userdata in
        let state = Unmanaged<TransferState>.fromOpaque(userdata!).takeUnretainedValue()
        let length = size * count
        state.headerBytes += length
        guard state.headerBytes <= CurlEasy.maxHeaderBytes else { state.headersExceeded = true; return 0 }
        state.response.read(line: UnsafeRawBufferPointer(start: data, count: length))
        return length
    }
}
