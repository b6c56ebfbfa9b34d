import FetchdConfig
import FetchdTestSupport
import Foundation
import Testing

/// One file of `Fixtures/broken` and the diagnostic checking it must produce, read from the
/// file's first line: `# expect: line=N key=KEY contains="TEXT"` (`key=-` when no key is named;
/// `\"` and `\\` are escapes inside TEXT).
///
/// Files named `NN-main-*.toml` are main files; every other file is a handler file.
struct BrokenFixture {
    /// The file's name, e.g. `01-unknown-key.toml`.
    let fileName: String
    /// The file's absolute path inside the corpus.
    let path: String
    /// The line the diagnostic must name.
    let line: Int
    /// The key the diagnostic must name, or nil for a file- or table-level problem.
    let key: String?
    /// Text the diagnostic's message must contain.
    let contains: String

    /// Whether the fixture is a main file (`fetchd.toml`) rather than a handler file.
    var isMainFile: Bool { fileName.contains("-main-") }

    /// Reads the fixture named `fileName` and its expectation header.
    init(fileName: String) throws {
        self.fileName = fileName
        path = PackagePaths.brokenFixtures.appendingPathComponent(fileName).path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let header = String(text.prefix { $0 != "\n" })
        let expectation = try #require(Self.parseHeader(header), "\(fileName): malformed header: \(header)")
        (line, key, contains) = expectation
    }

    /// Parses `# expect: line=N key=KEY contains="TEXT"`; nil when the line does not have that form.
    static func parseHeader(_ header: String) -> (line: Int, key: String?, contains: String)? {
        let pattern = #/^# expect: line=(\d+) key=(\S+) contains="((?:[^"\\]|\\.)*)"$/#
        guard let match = header.wholeMatch(of: pattern), let line = Int(match.1) else { return nil }
        var text = ""
        var escaped = false
        for character in match.3 {
            if escaped { text.append(character); escaped = false } else if character == "\\" { escaped = true } else {
                text.append(character)
            }
        }
        return (line, match.2 == "-" ? nil : String(match.2), text)
    }

    /// Checks the fixture the way `fetchd --check-config` would and returns the path that was
    /// checked with the diagnostics. A main file is checked as `fetchd.toml` in a folder of its
    /// own, so no drop-in folder is picked up; a handler file is checked where it is.
    func check() throws -> (path: String, diagnostics: [ConfigDiagnostic]) {
        guard isMainFile else { return (path, ConfigLoader.check(path: path)) }
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let copy = try folder.write(String(contentsOfFile: path, encoding: .utf8), to: "fetchd.toml")
        return (copy, ConfigLoader.check(path: copy))
    }
}

/// The corpus of broken configuration files under `Fixtures/broken`.
enum BrokenCorpus {
    /// Every `.toml` file of the corpus, sorted by name.
    static let fileNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: PackagePaths.brokenFixtures.path)) ?? []
        return names.filter { $0.hasSuffix(".toml") }.sorted()
    }()
}

/// Every broken file reports the located diagnostic its header promises.
@Suite("Broken configuration corpus")
struct BrokenCorpusTests {
    /// The corpus is large enough to mean something and covers both kinds of file.
    @Test func corpusIsComplete() throws {
        #expect(BrokenCorpus.fileNames.count >= 15)
        let fixtures = try BrokenCorpus.fileNames.map(BrokenFixture.init(fileName:))
        #expect(fixtures.contains { $0.isMainFile })
        #expect(fixtures.contains { !$0.isMainFile })
        for name in BrokenCorpus.fileNames {
            #expect(name.wholeMatch(of: #/\d\d-[a-z0-9-]+\.toml/#) != nil, "badly named fixture \(name)")
        }
    }

    /// The header parser reads keys, `-` and escaped quotes.
    @Test func headerParsing() throws {
        let parsed = try #require(BrokenFixture.parseHeader(#"# expect: line=7 key=- contains="a \"b\" \\c""#))
        #expect(parsed.line == 7)
        #expect(parsed.key == nil)
        #expect(parsed.contains == #"a "b" \c"#)
        #expect(BrokenFixture.parseHeader("# expect: line=x key=a contains=\"b\"") == nil)
        #expect(BrokenFixture.parseHeader("name = \"news\"") == nil)
    }

    /// Checking the file yields a diagnostic with exactly the expected file, line and key, whose
    /// message contains the expected text; and every diagnostic names the checked file.
    @Test(arguments: BrokenCorpus.fileNames)
    func reportsExpectedDiagnostic(fileName: String) throws {
        let fixture = try BrokenFixture(fileName: fileName)
        let (checkedPath, diagnostics) = try fixture.check()
        let listing = Comment(rawValue: "diagnostics:\n" + diagnostics.map { "  line=\($0.line.map(String.init) ?? "nil") key=\($0.key ?? "-"): \($0.description)" }.joined(separator: "\n"))
        #expect(!diagnostics.isEmpty, listing)
        #expect(diagnostics.allSatisfy { $0.file == checkedPath }, listing)
        let matches = diagnostics.contains {
            $0.file == checkedPath && $0.line == fixture.line && $0.key == fixture.key
                && $0.message.contains(fixture.contains)
        }
        #expect(matches, listing)
    }
}
