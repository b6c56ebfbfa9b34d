import FetchdCore
import Foundation

extension HandlerConfig {
    /// Reads `push_limit` and `push_token_file`.
    ///
    /// The token lives in a file of its own, never inline in the config: config files are
    /// installed world-readable (0644) and are copied, diffed and pasted into bug reports; a
    /// file that only the daemon's user can read keeps the secret apart (and works with
    /// systemd's `LoadCredential=`). A token file that group or others may read or write is
    /// refused, as ssh refuses such a private key.
    mutating func readPushOptions(_ reader: inout TableReader, readsSecrets: Bool) {
        if let text = reader.string("push_limit") {
            if let limit = PushLimit.parse(text) {
                pushLimit = limit
            } else {
                reader.report("push_limit", "\"\(text)\" is not a push limit; expected e.g. \"6/hour\", \"2/minute\", \"20/day\" or \"1/10s\" (1 to \(PushLimit.maxCount) per window of 1s to 1d)")
            }
        }
        if let path = reader.path("push_token_file"), readsSecrets {
            switch PushTokenFile.read(path) {
            case .success(let token): pushToken = token
            case .failure(let problem): reader.report("push_token_file", problem.description)
            }
        }
    }
}
