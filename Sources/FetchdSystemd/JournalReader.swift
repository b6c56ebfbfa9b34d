import CSystemdShim
import Foundation

/// Reads fetchd's own entries back from the journal (`sd_journal`), for `fetchctl history
/// --journal`: the history survives even if the state database is lost, and it includes the
/// entries of every daemon that ever logged for that handler on this machine.
public final class JournalReader {
    /// One finished fetch as the journal recorded it.
    public struct FetchEntry: Sendable, Equatable {
        /// When the entry was written.
        public var time: Date
        /// The `FETCHD_*` fields and `MESSAGE`, keyed by field name.
        public var fields: [String: String]
    }

    /// The journal could not be opened or read.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong and what to do.
        public let description: String
    }

    private let journal: OpaquePointer

    /// Opens the local journal (system and user journals this user may read).
    public init() throws(Failure) {
        var journal: OpaquePointer?
        let result = sd_journal_open(&journal, Int32(SD_JOURNAL_LOCAL_ONLY))
        guard result >= 0, let journal else {
            throw Failure(description: "cannot open the journal: \(String(cString: strerror(-result)))")
        }
        self.journal = journal
    }

    deinit { sd_journal_close(journal) }

    /// The newest `limit` fetch results of `handler`, newest first.
    public func fetches(of handler: String, limit: Int) throws(Failure) -> [FetchEntry] {
        sd_journal_flush_matches(journal)
        for match in ["FETCHD_HANDLER=\(handler)", "MESSAGE_ID=\(MessageID.fetchFinished)",
                      "MESSAGE_ID=\(MessageID.deadlineExpired)"] {
            guard sd_journal_add_match(journal, match, 0) >= 0 else {
                throw Failure(description: "cannot filter the journal on \(match)")
            }
        }
        guard sd_journal_seek_tail(journal) >= 0 else { throw Failure(description: "cannot seek in the journal") }
        var entries: [FetchEntry] = []
        while entries.count < limit, sd_journal_previous(journal) > 0 {
            var microseconds: UInt64 = 0
            _ = sd_journal_get_realtime_usec(journal, &microseconds)
            var fields: [String: String] = [:]
            for name in ["MESSAGE", "FETCHD_RESULT", "FETCHD_REASON", "FETCHD_TRIGGER", "FETCHD_DURATION_MS",
                         "FETCHD_BYTES", "FETCHD_SNAPSHOT", "FETCHD_VERSION"] {
                if let value = field(name) { fields[name] = value }
            }
            entries.append(FetchEntry(time: Date(timeIntervalSince1970: Double(microseconds) / 1_000_000), fields: fields))
        }
        return entries
    }

    private func field(_ name: String) -> String? {
        var data: UnsafeRawPointer?
        var length = 0
        guard sd_journal_get_data(journal, name, &data, &length) >= 0, let data else { return nil }
        let text = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        return text.hasPrefix(name + "=") ? String(text.dropFirst(name.count + 1)) : text
    }
}
