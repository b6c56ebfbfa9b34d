import ArgumentParser
import FetchdControl
import FetchdSystemd
import Foundation

/// `fetchctl history --journal`: the same rows, rebuilt from fetchd's journal entries.
enum JournalHistory {
    static func entries(of handler: String, limit: Int) throws -> [HistoryEntry] {
        do {
            return try JournalReader().fetches(of: handler, limit: limit).map { entry in
                let milliseconds = Int(entry.fields["FETCHD_DURATION_MS"] ?? "") ?? 0
                // The entry is written when the fetch ends: it started its duration earlier.
                return HistoryEntry(
                    startedAt: entry.time.addingTimeInterval(-Double(milliseconds) / 1000), durationMilliseconds: milliseconds,
                    result: entry.fields["FETCHD_RESULT"] ?? "?", reason: entry.fields["FETCHD_REASON"],
                    trigger: entry.fields["FETCHD_TRIGGER"] ?? "?", bytes: Int(entry.fields["FETCHD_BYTES"] ?? ""),
                    version: entry.fields["FETCHD_VERSION"])
            }
        } catch {
            throw CleanExit.failure("fetchctl: \(error.description)")
        }
    }
}
