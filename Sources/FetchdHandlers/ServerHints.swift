import FetchdCore
import Foundation

/// Reads how long a server asks to be left alone: `Retry-After` on 429 and 503, and
/// `Cache-Control: max-age` or `Expires` on fresh content. The scheduler takes it as a floor on
/// the next fetch (unless the handler sets `honor_server_hints = false`).
public enum ServerHints {
    /// The longest delay honoured: a misconfigured server cannot silence a handler for longer.
    public static let maximumSeconds = 7.0 * 86_400

    /// The delay the response asks for, in seconds, or nil when it asks for none.
    public static func delaySeconds(status: Int, headers: [String: String], now: Date = Date()) -> Double? {
        let seconds: Double?
        switch status {
        case 429, 503:
            seconds = headers["retry-after"].flatMap { retryAfter($0, now: now) }
        case 200..<300, 304:
            seconds = freshness(headers, now: now)
        default:
            seconds = nil
        }
        guard let seconds, seconds > 0 else { return nil }
        return min(seconds, maximumSeconds)
    }

    /// `Retry-After: 120` or `Retry-After: Sat, 21 Nov 2026 08:00:00 GMT`.
    static func retryAfter(_ value: String, now: Date) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds.isFinite { return seconds }
        return httpDate(trimmed).map { $0.timeIntervalSince(now) }
    }

    /// `max-age` wins over `Expires` (RFC 9111); `no-cache`/`no-store` mean no floor.
    static func freshness(_ headers: [String: String], now: Date) -> Double? {
        if let cacheControl = headers["cache-control"]?.lowercased() {
            let directives = cacheControl.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if directives.contains(where: { $0 == "no-cache" || $0 == "no-store" }) { return nil }
            if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }) {
                return Double(maxAge.dropFirst("max-age=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
        }
        return headers["expires"].flatMap(httpDate).map { $0.timeIntervalSince(now) }
    }

    /// An HTTP date in any of its three forms (see `HTTPDate`).
    static func httpDate(_ text: String) -> Date? {
        HTTPDate.parse(text)
    }
}
