@testable import CurlKit
import Testing

/// What the header callback keeps of a response, read line by line as libcurl delivers it.
@Suite struct ResponseHeadersTests {
    private func read(_ lines: [String]) -> ResponseHeaders {
        var headers = ResponseHeaders()
        for line in lines { Array(line.utf8).withUnsafeBytes { headers.read(line: $0) } }
        return headers
    }

    @Test func theLastResponseWinsAndNamesAreLowerCased() {
        let headers = read(["HTTP/1.1 301 Moved\r\n", "Location: /x\r\n", "\r\n",
                            "HTTP/2 200\r\n", "ETag:   \"v1\"  \r\n", "Cache-Control: max-age=60\r\n", "\r\n"])
        #expect(headers.status == 200)
        #expect(headers.fields == ["etag": "\"v1\"", "cache-control": "max-age=60"])
        #expect(headers.rangeValidator == "\"v1\"")
    }

    @Test func aWeakETagIsNoRangeValidator() {
        let headers = read(["HTTP/1.1 200 OK\r\n", "ETag: W/\"v1\"\r\n", "Last-Modified: Sat, 05 Nov 1994 08:49:37 GMT\r\n"])
        #expect(headers.rangeValidator == "Sat, 05 Nov 1994 08:49:37 GMT")
    }

    /// A value holding a control character is not kept (the field alone: the others are), so
    /// it can never be sent back as a validator; a tab is allowed.
    @Test func aFieldWithAControlCharacterIsNotKept() {
        let headers = read(["HTTP/1.1 200 OK\r\n", "ETag: \"abc\"\rX-Injected: evil\r\n",
                            "Last-Modified: Sat, 05 Nov 1994\u{0}08:49:37 GMT\r\n", "X-Del: a\u{7F}b\r\n",
                            "X-Tab: a\tb\r\n", "Content-Length: 2\r\n"])
        #expect(headers.fields == ["x-tab": "a\tb", "content-length": "2"])
        #expect(headers.rangeValidator == nil)
    }

    @Test func aStatusLineWithoutThreeDigitsIsZero() {
        #expect(read(["HTTP/1.1 2x0 OK\r\n"]).status == 0)
        #expect(read(["HTTP/1.1\r\n"]).status == 0)
    }

    @Test(arguments: [
        ("bytes 100-199/1000", 100, 1000 as Int?), ("bytes 0-0/*", 0, nil), ("bytes 5-5/6", 5, 6),
    ])
    func wellFormedContentRanges(_ text: String, _ start: Int, _ total: Int?) throws {
        let range = try #require(ResponseHeaders.parseContentRange(text))
        #expect(range.start == start && range.total == total)
    }

    /// Signs, a missing end, an end before the start, a total not past the end: refused, so a
    /// resumed transfer starts afresh instead of writing at a wrong offset.
    @Test(arguments: ["bytes -5-10/20", "bytes +5-10/20", "bytes 5-/20", "bytes 10-5/20", "bytes 0-9/9",
                      "bytes 0-9/-1", "bytes 0-9", "items 0-9/10", "bytes 0-9/1x"])
    func malformedContentRangesAreRefused(_ text: String) {
        #expect(ResponseHeaders.parseContentRange(text) == nil)
    }

    @Test func contentLengthIsDigitsOnly() {
        #expect(read(["HTTP/1.1 200 OK\r\n", "Content-Length: 42\r\n"]).contentLength == 42)
        #expect(read(["HTTP/1.1 200 OK\r\n", "Content-Length: -5\r\n"]).contentLength == nil)
        #expect(read(["HTTP/1.1 200 OK\r\n", "Content-Length: +5\r\n"]).contentLength == nil)
    }
}
