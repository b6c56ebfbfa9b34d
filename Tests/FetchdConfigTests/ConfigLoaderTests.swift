import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// Loading the main file and the handler drop-ins: what is kept, what is reported, and where.
@Suite("ConfigLoader")
struct ConfigLoaderTests {
    /// A handler file using every key, with three handlers of different shapes.
    static let completeHandlerFile = """
        [[handler]]
        name = "news"
        kind = "http"
        url = "https://example.com/news.xml"
        min_interval = "15m"
        deadline = "45s"
        retain = 5
        max_bytes = 1048576
        enabled = false

        [[handler]]
        name = "local-feed"
        kind = "http"
        url = "file:///srv/feeds/local.xml"
        allow_file_urls = true
        min_interval = "never"

        [[handler]]
        name = "backup.index"
        kind = "exec"
        command = ["/usr/bin/fetch-index", "--all"]
        environment = { LANG = "C", TOKEN_FILE = "/etc/fetchd/token" }
        user = "nobody"
        min_interval = "minimum"
        deadline = "1m30s"

        """

    /// Every key of a valid handler file is read, durations in seconds, defaults where unset.
    @Test func validHandlerFileLoadsEveryField() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let file = try folder.write(Self.completeHandlerFile, to: "handlers.d/10-all.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        #expect(loaded.handlers.map(\.name) == ["news", "local-feed", "backup.index"])
        #expect(ConfigLoader.check(path: file).isEmpty)

        let news = try #require(loaded.handler(named: "news"))
        #expect(news.kind == .http)
        #expect(news.request?.url == "https://example.com/news.xml")
        #expect(news.program == nil)
        #expect(news.minInterval == .seconds(900))
        #expect(news.deadlineSeconds == 45)
        #expect(news.retain == 5)
        #expect(news.maxBytes == 1_048_576)
        #expect(news.enabled == false)
        #expect(news.request?.allowFileURLs == false)
        #expect(news.environment.isEmpty)
        #expect(news.sourceFile == file)
        #expect(news.sourceLine == 1)

        let local = try #require(loaded.handler(named: "local-feed"))
        #expect(local.request?.url == "file:///srv/feeds/local.xml")
        #expect(local.request?.allowFileURLs == true)
        #expect(local.minInterval == .never)
        #expect(local.deadlineSeconds == Defaults.deadlineSeconds)
        #expect(local.retain == Defaults.retain)
        #expect(local.maxBytes == Defaults.maxBytes)
        #expect(local.enabled)
        #expect(local.sourceLine == 11)

        let exec = try #require(loaded.handler(named: "backup.index"))
        #expect(exec.kind == .exec)
        #expect(exec.program?.command == ["/usr/bin/fetch-index", "--all"])
        #expect(exec.environment == ["LANG": "C", "TOKEN_FILE": "/etc/fetchd/token"])
        #expect(exec.minInterval == .minimum)
        #expect(exec.deadlineSeconds == 90)
        #expect(exec.request == nil)
        #expect(exec.sourceLine == 18)
        // Debian's nobody: 65534, group nogroup.
        #expect(exec.user?.name == "nobody" && exec.user?.uid == 65534 && exec.user?.gid == 65534)
        #expect(news.user == nil)
    }

    /// A handler without `deadline` takes the main file's `default_deadline`.
    @Test func defaultDeadlineComesFromMainFile() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = try folder.write("default_deadline = \"12s\"\n", to: "fetchd.toml")
        try folder.write(Self.completeHandlerFile, to: "handlers.d/10-all.toml")
        let loaded = try ConfigLoader.load(mainFile: main)
        #expect(loaded.mainFile == main)
        #expect(loaded.daemon.defaultDeadlineSeconds == 12)
        #expect(loaded.handler(named: "local-feed")?.deadlineSeconds == 12)
        #expect(loaded.handler(named: "news")?.deadlineSeconds == 45)
    }

    /// A broken handler is dropped and reported; the valid handler beside it still loads.
    @Test func invalidHandlerDoesNotStopValidNeighbour() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let file = try folder.write("""
            [[handler]]
            name = "bad"
            kind = "http"
            url = "https://example.com/bad"
            deadline = "soon"

            [[handler]]
            name = "good"
            kind = "http"
            url = "https://example.com/good"

            """, to: "handlers.d/news.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.handlers.map(\.name) == ["good"])
        #expect(loaded.diagnostics.count == 1)
        let diagnostic = try #require(loaded.diagnostics.first)
        #expect(diagnostic.handler == "bad")
        #expect(diagnostic.file == file)
        #expect(diagnostic.line == 5)
        #expect(diagnostic.key == "deadline")
        #expect(diagnostic.message.contains("\"soon\" is not a duration"))
    }

    /// A file written with CRLF line ends (an editor on another system), with characters of
    /// more than one byte before the mistake, is reported at the mistake's own line.
    @Test func crlfFileReportsTheRightLine() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let text = [
            "# Nachrichten für Zürich — 日本語 \"quoted = not a key\"",
            "[[handler]]",
            "name = \"bad\"",
            "kind = \"exec\"",
            "command = [",
            "  \"/bin/echo\",",
            "  \"deadline = not a key: inside the array\",",
            "]",
            "deadline = \"soon\"",
            "",
        ].joined(separator: "\r\n")
        let file = try folder.write(text, to: "handlers.d/crlf.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        let diagnostic = try #require(loaded.diagnostics.first, "\(loaded.diagnostics)")
        #expect(diagnostic.file == file)
        #expect(diagnostic.key == "deadline")
        #expect(diagnostic.line == 9, "\(diagnostic)")
    }

    /// A name defined in two files: the first (in file-name order) wins, the second is reported
    /// at its own file and name key's line and points back at the first's.
    @Test func duplicateNamesAcrossFilesKeepTheFirst() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let first = try folder.write("""
            [[handler]]
            name = "news"
            kind = "http"
            url = "https://example.com/news.xml"

            """, to: "handlers.d/10-first.toml")
        let second = try folder.write("""
            # the same handler again, by mistake
            [[handler]]
            name = "news"
            kind = "exec"
            command = ["/usr/bin/fetch-news"]

            """, to: "handlers.d/20-second.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.handlers.count == 1)
        #expect(loaded.handler(named: "news")?.kind == .http)
        #expect(loaded.handler(named: "news")?.sourceFile == first)
        #expect(loaded.diagnostics.count == 1)
        let diagnostic = try #require(loaded.diagnostics.first)
        #expect(diagnostic.file == second)
        #expect(diagnostic.line == 3, "the duplicate's name key, not its [[handler]] header")
        #expect(diagnostic.key == "name")
        #expect(diagnostic.handler == "news")
        #expect(diagnostic.message.contains("already defined at \(first):2"))
    }

    /// Without a main file, and when one is not required, every default applies.
    @Test func missingOptionalMainFileGivesDefaults() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.mainFile == nil)
        #expect(loaded.daemon == DaemonConfig())
        #expect(loaded.daemon.maxConcurrent == Defaults.maxConcurrent)
        #expect(loaded.daemon.socketPath == Defaults.runtimeDirectory + "/" + Defaults.socketFileName)
        #expect(loaded.handlers.isEmpty)
        #expect(loaded.diagnostics.isEmpty)
        #expect(loaded.handlersDirectory == folder.file("handlers.d"))
    }

    /// An explicitly named main file that does not exist is an error naming the file.
    @Test func missingRequiredMainFileThrows() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = folder.file("fetchd.toml")
        let error = #expect(throws: ConfigLoadError.self) { try ConfigLoader.load(mainFile: main) }
        #expect(error?.description.contains("\(main): the file does not exist") == true)
    }

    /// A main file TOML cannot parse stops loading; the error names the file and the parser's line.
    @Test func unparseableMainFileThrowsWithFileAndLine() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = try folder.write("""
            cache_dir = "/var/cache/fetchd"
            # a comment
            max_concurrent = = 4

            """, to: "fetchd.toml")
        let error = try #require(#expect(throws: ConfigLoadError.self) { try ConfigLoader.load(mainFile: main) })
        #expect(error.description.contains("\(main):3: not valid TOML"), "\(error)")
        #expect(error.diagnostics.first?.line == 3)
        #expect(error.diagnostics.first?.key == nil)
    }

    /// A main file that parses but is invalid also stops loading, locating every problem.
    @Test func invalidMainFileThrowsEveryProblem() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = try folder.write("max_concurrent = 0\nheartbeat = \"often\"\n", to: "fetchd.toml")
        let error = try #require(#expect(throws: ConfigLoadError.self) { try ConfigLoader.load(mainFile: main) })
        #expect(error.diagnostics.map(\.key) == ["max_concurrent", "heartbeat"])
        #expect(error.diagnostics.map(\.line) == [1, 2])
        #expect(error.description.contains("\(main):1: key \"max_concurrent\": 0 is out of range"))
        #expect(error.description.contains("fetchd --check-config"))
    }

    /// A relative `handlers_dir` is taken from the main file's folder, not the working directory;
    /// an absolute one is used as written.
    @Test func handlersDirectoryResolution() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let handler = "[[handler]]\nname = \"news\"\nkind = \"http\"\nurl = \"https://example.com/\"\n"
        try folder.write(handler, to: "conf/drop-ins/news.toml")
        let relative = try folder.write("handlers_dir = \"drop-ins\"\n", to: "conf/fetchd.toml")
        let loaded = try ConfigLoader.load(mainFile: relative)
        #expect(loaded.handlersDirectory == folder.file("conf/drop-ins"))
        #expect(loaded.handlers.map(\.name) == ["news"])

        let absolute = try folder.write("handlers_dir = \"\(folder.file("conf/drop-ins"))\"\n", to: "other/fetchd.toml")
        let loadedAbsolute = try ConfigLoader.load(mainFile: absolute)
        #expect(loadedAbsolute.handlersDirectory == folder.file("conf/drop-ins"))
        #expect(loadedAbsolute.handlers.map(\.name) == ["news"])
    }

    /// A minimal valid http handler table named `name`.
    static func handlerTable(_ name: String) -> String {
        "[[handler]]\nname = \"\(name)\"\nkind = \"http\"\nurl = \"https://example.com/\(name)\"\n"
    }

    /// Only `*.toml` files that are not hidden are read from the drop-in folder, in name order.
    @Test func dropInSelectionAndOrder() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        try folder.write(Self.handlerTable("b"), to: "handlers.d/20-b.toml")
        try folder.write(Self.handlerTable("a"), to: "handlers.d/10-a.toml")
        try folder.write(Self.handlerTable("hidden"), to: "handlers.d/.30-hidden.toml")
        try folder.write(Self.handlerTable("backup"), to: "handlers.d/40-c.toml.bak")
        let main = try folder.write("max_concurrent = 2\n", to: "fetchd.toml")
        let loaded = try ConfigLoader.load(mainFile: main)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        #expect(loaded.handlers.map(\.name) == ["a", "b"])
        #expect(ConfigLoader.check(path: main).isEmpty)
    }

    /// `[[handler]]` tables in the main file are accepted and come before the drop-ins.
    @Test func mainFileHandlersComeFirst() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        try folder.write(Self.handlerTable("a"), to: "handlers.d/10-a.toml")
        let main = try folder.write("max_concurrent = 2\n\n" + Self.handlerTable("inline"), to: "fetchd.toml")
        #expect(ConfigLoader.check(path: main).map(\.description) == [])
        let loaded = try ConfigLoader.load(mainFile: main)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        #expect(loaded.handlers.map(\.name) == ["inline", "a"])
        #expect(loaded.handler(named: "inline")?.sourceLine == 3)
    }

    /// A top-level key in a drop-in is reported as not belonging in a handler file, at its line,
    /// and the file's handlers still load.
    @Test func strayKeyInDropInIsReported() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let file = try folder.write("""
            deadline = "30s"
            [[handler]]
            name = "news"
            kind = "http"
            url = "https://example.com/news.xml"

            """, to: "handlers.d/news.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.handlers.map(\.name) == ["news"])
        #expect(loaded.diagnostics == [ConfigDiagnostic(
            file: file, line: 1, key: "deadline",
            message: "unknown key; a handler file holds only [[handler]] tables")])
    }

    /// An unknown kind is reported once, for `kind`, without complaints that only apply to
    /// the kind the loader falls back to.
    @Test func unknownKindIsReportedAlone() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let file = try folder.write("""
            [[handler]]
            name = "news"
            kind = "htpp"
            url = "https://example.com/news.xml"

            """, to: "news.toml")
        let diagnostics = ConfigLoader.check(path: file)
        #expect(diagnostics.contains { $0.key == "kind" && $0.line == 3 })
        #expect(diagnostics.count == 1, "\(diagnostics)")
    }
}
