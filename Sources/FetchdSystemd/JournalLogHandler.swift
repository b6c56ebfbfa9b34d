import CSystemdShim
import Foundation
import Logging

/// A swift-log handler that writes structured entries to journald (`sd_journal_sendv`).
///
/// Every entry has `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER` and the code location; each
/// metadata key becomes a field `FETCHD_<KEY>` (upper-cased, sanitised to journald's field-name
/// rules), so `handler` is `FETCHD_HANDLER` and `duration_ms` is `FETCHD_DURATION_MS`. The
/// metadata key `message_id` becomes the entry's `MESSAGE_ID`.
public struct JournalLogHandler: LogHandler {
    /// The level below which entries are dropped.
    public var logLevel: Logger.Level = .info
    /// Metadata attached to every entry of this logger.
    public var metadata: Logger.Metadata = [:]
    private let identifier: String

    /// Creates a handler that tags entries with `SYSLOG_IDENTIFIER=identifier`.
    public init(identifier: String) { self.identifier = identifier }

    /// Metadata access by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one entry.
    public func log(event: LogEvent) {
        var fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(Self.priority(event.level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            if key == MessageID.metadataKey {
                fields.append("MESSAGE_ID=\(value)")
            } else {
                fields.append("\(Self.fieldName(key))=\(value)")
            }
        }
        Self.send(fields)
    }

    /// journald field names: `A-Z`, `0-9` and `_`, not starting with `_` (reserved for trusted
    /// fields) or a digit, at most 64 characters. fetchd's fields are all prefixed `FETCHD_`.
    public static func fieldName(_ key: String) -> String {
        let sanitised = String(key.uppercased().unicodeScalars.map { scalar -> Character in
            ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) ? Character(scalar) : "_"
        })
        return String(("FETCHD_" + sanitised).prefix(64))
    }

    /// syslog priorities, as journald expects them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func send(_ fields: [String]) {
        let buffers = fields.map { Array($0.utf8) }
        var vectors: [iovec] = []
        var pointers: [UnsafeMutableRawPointer] = []
        for buffer in buffers {
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(buffer.count, 1), alignment: 1)
            buffer.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: buffer.count) }
            pointers.append(pointer)
            vectors.append(iovec(iov_base: pointer, iov_len: buffer.count))
        }
        defer { pointers.forEach { $0.deallocate() } }
        _ = sd_journal_sendv(&vectors, Int32(vectors.count))
    }
}

/// Chooses where logs go: journald when stderr is connected to it (`$JOURNAL_STREAM` names
/// stderr's device and inode), else readable lines on stderr.
public enum LogDestination {
    /// True when stderr is the journal's stream for this service.
    public static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var info = stat()
        guard parts.count == 2, fstat(2, &info) == 0 else { return false }
        return String(info.st_dev) == parts[0] && String(info.st_ino) == parts[1]
    }

    /// Bootstraps swift-log once for the process.
    public static func bootstrap(level: Logger.Level, identifier: String = "fetchd") {
        let journal = stderrIsJournal()
        LoggingSystem.bootstrap { label in
            if journal {
                var handler = JournalLogHandler(identifier: identifier)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
