import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// Configuration files made to break the parser or to hide handlers from it: each is refused
/// at once, naming the file and the line (`fetchd --check-config` reads them the same way).
struct HostileConfigFileTests {
    private static func handler(_ name: String) -> String {
        "[[handler]]\nname = \"\(name)\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n"
    }

    /// Examines a main file and `handlers.d/hostile.toml` holding `bytes`.
    private func examine(_ bytes: [UInt8]) throws -> (ConfigLoader.Examination, file: String, elapsed: Duration) {
        let folder = try TemporaryDirectory("hostile-config")
        defer { folder.remove() }
        let main = try folder.write("", to: "fetchd.toml")
        let file = try folder.write("", to: "handlers.d/hostile.toml")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let started = ContinuousClock.now
        let examination = ConfigLoader.examine(path: main)
        return (examination, file, ContinuousClock.now - started)
    }

    /// The handlers after a NUL byte are not silently lost: toml++ reads a C string.
    @Test func aNULByteIsRefusedWithItsLineAndColumn() throws {
        let text = Self.handler("one") + "# x\u{0}y\n" + Self.handler("two")
        let (examination, file, _) = try examine(Array(text.utf8))
        let problem = try #require(examination.diagnostics.first, "a NUL byte was taken silently")
        #expect(problem.file == file && problem.line == 5, "\(problem)")
        #expect(problem.description.contains("\(file):5: column 4: a NUL byte"), "\(problem)")
        #expect(examination.exitStatus != 0)
    }

    @Test func bytesThatAreNotUTF8AreRefusedWithTheirLine() throws {
        let bytes = Array((Self.handler("one") + "# caf").utf8) + [0xE9] + Array("\n".utf8)
        let (examination, file, _) = try examine(bytes)
        let problem = try #require(examination.diagnostics.first)
        #expect(problem.description.contains("\(file):5: column 6: not UTF-8 text (byte 0xE9)"), "\(problem)")
        // An overlong form and a surrogate are not UTF-8 either; a well-formed é is.
        for bad: [UInt8] in [[0xC0, 0xAF], [0xED, 0xA0, 0x80]] {
            #expect(try examine(Array("# x".utf8) + bad + [0x0A]).0.diagnostics.first?.line == 1)
        }
        #expect(try examine(Array((Self.handler("one") + "# café\n").utf8)).0.diagnostics.isEmpty)
    }

    /// `[a.a.a...]` of 10,000 parts took toml++ 13 s (quadratic): refused before parsing.
    @Test func aDeeplyDottedKeyIsRefusedAtOnce() throws {
        let parts = Array(repeating: "a", count: 10_000).joined(separator: ".")
        for hostile in ["[\(parts)]\n", "\(parts) = 1\n", "x = { \(parts) = 1 }\n"] {
            let (examination, file, elapsed) = try examine(Array((Self.handler("one") + hostile).utf8))
            let problem = try #require(examination.diagnostics.first)
            #expect(problem.description.hasPrefix("\(file):5: column "), "\(problem)")
            #expect(problem.message.contains("more than \(Defaults.configMaxLineDots) dots"), "\(problem)")
            #expect(elapsed < .seconds(2), "took \(elapsed)")
        }
        // Dots inside strings, comments and multi-line strings are not counted.
        let dots = String(repeating: "a.", count: 100)
        let quiet = "[[handler]]\nname = \"one\"\nkind = \"http\"\nurl = \"https://\(dots)example/\" # \(dots)\n"
            + "description = '\(dots)'\n[handler.headers]\nX-Note = \"\"\"\n\(dots)\"\"\"\n"
        let (examination, _, _) = try examine(Array(quiet.utf8))
        #expect(!examination.diagnostics.contains { $0.message.contains("dots") }, "\(examination.diagnostics)")
    }

    @Test func aFileOverTheSizeBoundIsRefused() throws {
        let comment = "# " + String(repeating: "x", count: 1000) + "\n"
        let text = Self.handler("one") + String(repeating: comment, count: Defaults.configMaxFileBytes / comment.utf8.count + 1)
        let (examination, file, _) = try examine(Array(text.utf8))
        let problem = try #require(examination.diagnostics.first)
        #expect(problem.file == file && problem.line == nil)
        #expect(problem.message.contains("larger than \(Defaults.configMaxFileBytes) bytes"), "\(problem)")
    }

    @Test func aLineOverTheLengthBoundIsRefused() throws {
        let long = "# " + String(repeating: "x", count: Defaults.configMaxLineBytes) + "\n"
        let (examination, file, _) = try examine(Array((Self.handler("one") + long + Self.handler("two")).utf8))
        let problem = try #require(examination.diagnostics.first)
        #expect(problem.description.hasPrefix("\(file):5: the line is \(Defaults.configMaxLineBytes + 2) bytes long"), "\(problem)")
    }

    /// A header value longer than servers take is refused at load, naming the key, instead of
    /// failing every fetch (a 10 MB `user_agent` was curl error 43 at each one).
    @Test(arguments: ["user_agent = \"VALUE\"", "headers = { X-Long = \"VALUE\" }"])
    func aHeaderValueOverTheBoundIsRefused(_ assignment: String) throws {
        let text: (Int) -> String = { length in
            "[[handler]]\nname = \"one\"\nkind = \"http\"\nurl = \"https://example.com/\"\n"
                + assignment.replacingOccurrences(of: "VALUE", with: String(repeating: "u", count: length)) + "\n"
        }
        let (examination, file, _) = try examine(Array(text(Defaults.httpFieldMaxBytes + 1).utf8))
        let problem = try #require(examination.diagnostics.first, "a header value over the bound was taken")
        #expect(problem.file == file && problem.line == 5 && ["user_agent", "headers"].contains(problem.key), "\(problem)")
        #expect(problem.message.contains("at most \(Defaults.httpFieldMaxBytes)"), "\(problem)")
        #expect(try examine(Array(text(Defaults.httpFieldMaxBytes - 10).utf8)).0.diagnostics.isEmpty)
    }
}
