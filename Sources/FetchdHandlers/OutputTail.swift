import Synchronization

/// Keeps only the last `limit` bytes of a program's output: enough to explain a failure,
/// bounded however much the program prints.
final class OutputTail: Sendable {
    private let limit: Int
    private let bytes = Mutex<[UInt8]>([])

    init(limit: Int) { self.limit = limit }

    func append(_ chunk: UnsafeRawBufferPointer) {
        bytes.withLock { kept in
            if chunk.count >= limit {
                kept = Array(chunk.suffix(limit))
            } else {
                kept.append(contentsOf: chunk)
                if kept.count > limit { kept.removeFirst(kept.count - limit) }
            }
        }
    }

    /// The kept output as one line: last non-empty lines joined, trimmed.
    var text: String {
        let string = String(decoding: bytes.withLock { $0 }, as: UTF8.self)
        let lines = string.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.filter { !$0.isEmpty }.suffix(3).joined(separator: " | ")
    }
}
