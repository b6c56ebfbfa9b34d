import Foundation

/// The data a push carries to its handler (`FETCHD_PUSH_DATA`, `FetchContext.pushData`): one
/// JSON text of at most `Defaults.pushDataMaxBytes` bytes, like an APNs payload.
public enum PushData {
    /// Why push data was refused.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// Larger than the limit: the sender must send less (a URL to fetch rather than the content).
        case tooLarge(bytes: Int, limit: Int)
        /// Not a JSON text.
        case notJSON(String)

        /// What went wrong and what to send instead.
        public var description: String {
            switch self {
            case .tooLarge(let bytes, let limit):
                "the push data is \(bytes) bytes, over the limit of \(limit) bytes; send a smaller JSON text (e.g. an id or URL to fetch)"
            case .notJSON(let detail):
                "the push data is not valid JSON (\(detail)); send a JSON text such as {\"id\": 42}"
            }
        }
    }

    /// Checks `bytes` and returns them as text: valid UTF-8 JSON of at most `limit` bytes.
    /// Empty data means "no data" (nil). Any JSON value is accepted, not only objects.
    public static func validate(_ bytes: [UInt8], limit: Int = Defaults.pushDataMaxBytes) throws(Problem) -> String? {
        guard bytes.count <= limit else { throw .tooLarge(bytes: bytes.count, limit: limit) }
        guard !bytes.isEmpty else { return nil }
        do {
            _ = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "it does not parse"
            throw .notJSON(detail)
        }
        // JSONSerialization accepts UTF-16 and UTF-32 too; the environment wants UTF-8 without NUL
        // (a JSON text never holds a raw NUL: it must be escaped).
        guard let text = String(validating: bytes, as: UTF8.self), !bytes.contains(0) else {
            throw .notJSON("it is not UTF-8")
        }
        return text
    }

    /// `validate` for text.
    public static func validate(_ text: String, limit: Int = Defaults.pushDataMaxBytes) throws(Problem) -> String? {
        try validate(Array(text.utf8), limit: limit)
    }
}
