/// The status and header fields of the response being read, built line by line from what
/// libcurl hands the header callback (`CurlEasy.readHeader`): a status line starts a response
/// afresh (after a redirect or a `100 Continue` only the last one counts), a field line is kept
/// with its name lower-cased and its value trimmed. Public so that the fuzzer drives exactly
/// the code a server's bytes reach.
public struct ResponseHeaders: Sendable {
    /// The status of the response whose headers are being read (0 before its status line, or
    /// when that line holds no three-digit code).
    public private(set) var status = 0
    /// Its fields, names lower-cased; a repeated field keeps its last value. Sized for a usual
    /// response's headers, so that reading them does not rehash it as it grows. A field whose
    /// value holds a control character is not kept (`isFieldValue`).
    public private(set) var fields = [String: String](minimumCapacity: 16)

    /// Empty, before the first status line.
    public init() {}

    /// Reads one header line as libcurl delivers it (with its line ending, or the empty line
    /// that ends the block). Bytes, not Foundation's trimming: this runs for every header line
    /// of every fetch.
    public mutating func read(line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            fields.removeAll(keepingCapacity: true)
            status = Self.statusCode(of: line)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0d || $0 == 0x0a }
            var start = colon + 1, end = line.count
            while start < end, isSpace(line[start]) { start += 1 }
            while end > start, isSpace(line[end - 1]) { end -= 1 }
            // A bare CR inside a value (libcurl ends lines at LF only) would end the line early
            // wherever the value is sent back, as a validator is: RFC 9110 (5.5) has such a
            // field rejected, and it is, alone; the response itself still counts.
            guard Self.isFieldValue(line[start..<end]) else { return }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            fields[name] = String(decoding: line[start..<end], as: UTF8.self)
        }
    }

    /// Whether `bytes` may be a field value, received or sent: no control character but the
    /// tab (no CR, LF or NUL, which end or cut a header line, nor other C0 controls or DEL).
    public static func isFieldValue<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        !bytes.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// The validator `If-Range` may carry: a strong ETag (RFC 9110 forbids weak ones), else
    /// Last-Modified.
    public var rangeValidator: String? {
        if let etag = fields["etag"], !etag.hasPrefix("W/") { return etag }
        return fields["last-modified"]
    }

    /// `Content-Length`, when it is a decimal number.
    public var contentLength: Int? {
        fields["content-length"].flatMap { Self.decimal(Substring($0)) }
    }

    /// The `Content-Range` of a 206, when it parses.
    public var contentRange: (start: Int, total: Int?)? {
        fields["content-range"].flatMap(Self.parseContentRange)
    }

    /// `bytes START-END/TOTAL` (TOTAL may be `*`, unknown). Nil unless START and END are
    /// decimal numbers with START <= END and TOTAL, when known, past END.
    static func parseContentRange(_ text: String) -> (start: Int, total: Int?)? {
        guard text.hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-"), let slash = spec.firstIndex(of: "/"), dash < slash,
              let start = decimal(spec[..<dash]), let end = decimal(spec[spec.index(after: dash)..<slash]),
              start <= end else { return nil }
        let totalText = spec[spec.index(after: slash)...]
        if totalText == "*" { return (start, nil) }
        guard let total = decimal(totalText), total > end else { return nil }
        return (start, total)
    }

    /// Digits only: `Int.init` would take a sign ("+5", "-5").
    private static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(text)
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
