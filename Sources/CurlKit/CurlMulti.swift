import CCurlShim

/// One libcurl multi handle and the share handle its transfers use, owned by this object and
/// freed in `deinit`. Only `wakeup()` may be called from another thread (libcurl allows it);
/// everything else belongs to the `HTTPClient` driver thread.
final class CurlMulti: @unchecked Sendable {
    private let multi: UnsafeMutableRawPointer
    /// Shares TLS sessions and the DNS cache between transfers, so a fetch of a host seen in an
    /// earlier wake resumes its TLS session instead of a full handshake. The multi handle already
    /// shares its connection pool; one thread uses both, so no lock callbacks are needed.
    let share: UnsafeMutableRawPointer

    /// Creates the handles; fails only when libcurl cannot allocate them.
    init() throws(HTTPFailure) {
        guard CurlEasy.globalInit, let multi = curl_multi_init() else {
            throw .other(code: -1, message: "libcurl could not create a multi handle")
        }
        guard let share = curl_share_init() else {
            curl_multi_cleanup(multi)
            throw .other(code: -1, message: "libcurl could not create a share handle")
        }
        self.multi = multi
        self.share = share
        _ = fetchd_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        _ = fetchd_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue))
    }

    deinit {
        curl_multi_cleanup(multi)
        curl_share_cleanup(share)
    }

    /// Applies the connection limits: in all, per host, and how many idle connections are kept
    /// for reuse by later fetches.
    func apply(_ limits: HTTPClient.Limits) {
        _ = fetchd_curl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.maxConnections)
        _ = fetchd_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.maxHostConnections)
        _ = fetchd_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limits.maxConnections)
        _ = fetchd_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    /// Starts driving `easy`.
    func add(_ easy: CurlEasy) -> CURLMcode { curl_multi_add_handle(multi, easy.handle) }

    /// Stops driving `easy` (finished or cancelled).
    func remove(_ easy: CurlEasy) { _ = curl_multi_remove_handle(multi, easy.handle) }

    /// Moves every transfer forward as far as it can go without blocking.
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(multi, &running)
    }

    /// The transfers that finished since the last call: their handle and result code.
    func finished() -> [(handle: UnsafeMutableRawPointer, code: CURLcode)] {
        var done: [(UnsafeMutableRawPointer, CURLcode)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            if message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle {
                done.append((handle, fetchd_curl_msg_result(message)))
            }
        }
        return done
    }

    /// Waits until a transfer can move, `wakeup()` is called, or `timeoutMilliseconds` pass.
    func poll(timeoutMilliseconds: Int32) {
        _ = curl_multi_poll(multi, nil, 0, timeoutMilliseconds, nil)
    }

    /// Ends a `poll` early; safe from any thread.
    func wakeup() { _ = curl_multi_wakeup(multi) }
}
