import FetchdCore
import Foundation
import TOMLKit

/// A loaded configuration: daemon settings, the handlers that passed validation, and the
/// problems found in handler files (which disable the affected handlers, not the daemon).
public struct LoadedConfig: Sendable, Equatable {
    /// The main file's path, or nil when defaults were used because it does not exist.
    public var mainFile: String?
    /// Daemon-wide settings.
    public var daemon: DaemonConfig
    /// Valid handlers, in file order.
    public var handlers: [HandlerConfig] {
        didSet { places = Self.places(of: handlers) }
    }
    /// Problems in handler files; each names the file, line and key.
    public var diagnostics: [ConfigDiagnostic]
    /// The handler drop-in folder that was read.
    public var handlersDirectory: String
    /// Each handler's place in `handlers`, by name: the daemon looks a handler up by name for
    /// every push, use and manual fetch, which would otherwise scan all of them (ten thousand,
    /// in the benchmarks).
    private var places: [String: Int]

    init(mainFile: String?, daemon: DaemonConfig, handlers: [HandlerConfig], diagnostics: [ConfigDiagnostic],
         handlersDirectory: String) {
        self.mainFile = mainFile
        self.daemon = daemon
        self.handlers = handlers
        self.diagnostics = diagnostics
        self.handlersDirectory = handlersDirectory
        self.places = Self.places(of: handlers)
    }

    /// The handlers applications registered over D-Bus, in force beside the configured ones.
    public var registeredHandlers: [HandlerConfig] { handlers.filter { $0.registeredBy != nil } }

    /// The configuration with `registered` (handlers applications registered over D-Bus) in
    /// place of the registered handlers it held; the handlers from files stay as they are.
    public func replacingRegistered(with registered: [HandlerConfig]) -> LoadedConfig {
        var config = self
        config.handlers = handlers.filter { $0.registeredBy == nil } + registered
        return config
    }

    /// Whether a handler runs a program: an exec handler, or a transfer's `on_complete`.
    public var runsPrograms: Bool {
        handlers.contains { $0.kind == .exec || $0.transfer?.onComplete != nil }
    }

    /// Whether fetchd starts programs itself: it runs some, and not through fetchd-runas.
    public var startsPrograms: Bool { runsPrograms && daemon.runasSocket == nil }

    /// The handler named `name`, if it is loaded.
    public func handler(named name: String) -> HandlerConfig? { places[name].map { handlers[$0] } }

    /// Each handler by name, at its place (the first, should a name come twice: the loader
    /// drops later ones).
    private static func places(of handlers: [HandlerConfig]) -> [String: Int] {
        var places = [String: Int](minimumCapacity: handlers.count)
        for (place, handler) in handlers.enumerated() where places[handler.name] == nil {
            places[handler.name] = place
        }
        return places
    }
}

/// Reads `fetchd.toml` and its `handlers.d/*.toml` drop-ins.
public enum ConfigLoader {
    /// Loads the main file and every handler file.
    ///
    /// - Parameter requireMainFile: when false, a missing main file means "all defaults"
    ///   (the packaged default path); when true (an explicit `--config`), it is an error.
    /// - Parameter readsSecrets: when false, secret files (`push_token_file`) are not read, only
    ///   named: for tools that look at schedules and may not read the daemon's secrets.
    /// - Throws: `ConfigLoadError` when the main file is unreadable, unparseable or invalid.
    public static func load(mainFile: String, requireMainFile: Bool = true,
                            readsSecrets: Bool = true) throws(ConfigLoadError) -> LoadedConfig {
        let reading = read(mainFile: mainFile, requireMainFile: requireMainFile, readsSecrets: readsSecrets)
        guard reading.stopping.isEmpty else { throw ConfigLoadError(diagnostics: reading.stopping) }
        return reading.config
    }

    /// The main file and every handler file, read on past the problems that stop a start, so
    /// that a check finds the handler files' problems too: `stopping` holds those of the main
    /// file and of the trust checks (the main file's unusable keys then keep their defaults,
    /// and no secret is read), `config.diagnostics` those that leave handlers out.
    private static func read(mainFile: String, requireMainFile: Bool,
                             readsSecrets: Bool) -> (config: LoadedConfig, stopping: [ConfigDiagnostic]) {
        var daemon = DaemonConfig()
        var mainDocument: ParsedDocument?
        defer { mainDocument?.release() }
        var stopping: [ConfigDiagnostic] = []
        if let untrusted = ConfigTrust.problem(at: mainFile) { stopping.append(untrusted) }
        if requireMainFile || FileManager.default.fileExists(atPath: mainFile) {
            let parsed = parse(file: mainFile)
            stopping += parsed.diagnostics
            if let document = parsed.document {
                mainDocument = document
                var reader = TableReader(table: document.table, file: mainFile, lines: document.lines,
                                         section: .init(name: "", element: nil))
                daemon = DaemonConfig.read(from: &reader)
                stopping += reader.diagnostics
            }
        }
        let baseDirectory = PathName.directory(of: mainFile)
        let handlersDirectory = daemon.handlersDirectory.hasPrefix("/")
            ? daemon.handlersDirectory
            : (baseDirectory.isEmpty ? "." : baseDirectory) + "/" + daemon.handlersDirectory
        // The folder is listed once: the files checked are the files read.
        let files = handlerFiles(in: handlersDirectory)
        stopping += ([handlersDirectory] + files).compactMap { ConfigTrust.problem(at: $0) }
        // A configuration that does not start reads no secret: it is only being checked.
        daemon.readsSecrets = readsSecrets && stopping.isEmpty
        var (handlers, diagnostics) = loadHandlers(files, daemon: daemon)
        if let mainDocument, mainDocument.table["handler"] != nil {
            let (mainHandlers, mainDiagnostics) = readHandlers(in: mainDocument, file: mainFile, daemon: daemon,
                                                               isHandlerFile: false)
            handlers.insert(contentsOf: mainHandlers, at: 0)
            diagnostics.insert(contentsOf: mainDiagnostics, at: 0)
        }
        rejectDuplicates(&handlers, &diagnostics)
        let config = LoadedConfig(mainFile: mainDocument == nil ? nil : mainFile, daemon: daemon, handlers: handlers,
                                  diagnostics: diagnostics, handlersDirectory: handlersDirectory)
        return (config, stopping.map { $0.stoppingStart() })
    }

    /// Every problem in `path` (`examine`'s, without what they do to fetchd).
    public static func check(path: String) -> [ConfigDiagnostic] {
        examine(path: path).diagnostics
    }

    /// What checking a configuration found, for `fetchd --check-config`.
    public struct Examination: Sendable {
        /// Every problem, in file and line order within each file.
        public let diagnostics: [ConfigDiagnostic]
        /// Whether fetchd would start with it: problems in handler files only leave those
        /// handlers out, a problem in the main file or a failed trust check stops the start
        /// (each problem says which, `ConfigDiagnostic.effect`).
        public var wouldStart: Bool { !diagnostics.contains { $0.effect == .stopsStart } }

        /// The exit status of both checkers (`fetchd --check-config`, `fetchctl check-config`):
        /// 0 when clean, 1 when fetchd would start and leave handlers out, 78 (EX_CONFIG, as a
        /// start with it exits) when it would not start.
        public var exitStatus: Int32 { diagnostics.isEmpty ? 0 : wouldStart ? 1 : 78 }

        /// What both checkers print for `path`: each problem with what it does to fetchd, then
        /// a count; "PATH: OK" when there is none.
        public func lines(checked path: String) -> [String] {
            guard !diagnostics.isEmpty else { return ["\(path): OK"] }
            return diagnostics.map { "\($0.description) (\($0.effectText))" }
                + ["\(diagnostics.count) problem(s) found; fetchd \(wouldStart ? "starts without the handlers named" : "does not start")"]
        }
    }

    /// Every problem in `path` (a relative path is taken from the working directory), each
    /// marked with what it does to fetchd. A file in a `handlers.d` folder, or holding only
    /// `[[handler]]` tables, is checked as a handler file, with the trust checks fetchd applies
    /// to it and its folder; anything else as a main file together with its drop-in folder, as
    /// fetchd loads it (a missing main file is a problem when `requireMainFile`, else means the
    /// defaults).
    public static func examine(path relative: String, requireMainFile: Bool = true) -> Examination {
        let path = PathName.absolute(relative)
        if !requireMainFile && !FileManager.default.fileExists(atPath: path) { return examineMain(path, requireMainFile: false) }
        // A drop-in is a file in a handlers.d folder, or one that holds nothing but [[handler]] tables.
        let folder = PathName.lastComponent(of: PathName.directory(of: path))
        let inHandlersFolder = folder == Defaults.handlersDirectoryName
        let parsed = parse(file: path)
        guard let document = parsed.document else {
            let diagnostics = inHandlersFolder ? parsed.diagnostics : parsed.diagnostics.map { $0.stoppingStart() }
            return Examination(diagnostics: diagnostics)
        }
        defer { document.release() }
        let onlyHandlers = document.table.count > 0 && !document.hasKeysBesidesHandler
        guard inHandlersFolder || (onlyHandlers && PathName.lastComponent(of: path) != "fetchd.toml") else {
            return examineMain(path, requireMainFile: requireMainFile)
        }
        // fetchd refuses to start on a handler file (or its folder) it may not trust.
        let untrusted = (inHandlersFolder ? [PathName.directory(of: path), path] : [path])
            .compactMap { ConfigTrust.problem(at: $0)?.stoppingStart() }
        var (handlers, diagnostics) = readHandlers(in: document, file: path, daemon: DaemonConfig())
        rejectDuplicates(&handlers, &diagnostics)
        return Examination(diagnostics: untrusted + diagnostics)
    }

    private static func examineMain(_ path: String, requireMainFile: Bool) -> Examination {
        let reading = read(mainFile: path, requireMainFile: requireMainFile, readsSecrets: true)
        return Examination(diagnostics: reading.stopping + reading.config.diagnostics)
    }

    /// Loads the handler files `files` (`handlerFiles(in:)`), in that order.
    static func loadHandlers(_ files: [String], daemon: DaemonConfig) -> ([HandlerConfig], [ConfigDiagnostic]) {
        var handlers: [HandlerConfig] = []
        var diagnostics: [ConfigDiagnostic] = []
        for file in files {
            let parsed = parse(file: file)
            guard let document = parsed.document else { diagnostics += parsed.diagnostics; continue }
            defer { document.release() }
            let (found, problems) = readHandlers(in: document, file: file, daemon: daemon)
            if handlers.isEmpty { handlers = found } else { handlers += found }  // one file: no copy
            diagnostics += problems
        }
        return (handlers, diagnostics)
    }

    /// The handler files of `directory` (`*.toml`, not hidden), in name order; none when it is missing.
    static func handlerFiles(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().filter { $0.hasSuffix(".toml") && !$0.hasPrefix(".") }.map { directory + "/" + $0 }
    }

    private static func readHandlers(in document: ParsedDocument, file: String, daemon: DaemonConfig,
                                     isHandlerFile: Bool = true) -> ([HandlerConfig], [ConfigDiagnostic])
    {
        var handlers: [HandlerConfig] = []
        var diagnostics: [ConfigDiagnostic] = []
        if isHandlerFile && document.hasKeysBesidesHandler {
            for key in document.table.keys.sorted() where key != "handler" {
                diagnostics.append(ConfigDiagnostic(
                    file: file, line: document.lines.line(of: key, in: .init(name: "", element: nil)), key: key,
                    message: "unknown key; a handler file holds only [[handler]] tables"))
            }
        }
        guard let value = document.table["handler"] else { return (handlers, diagnostics) }
        guard let array = value.array else {
            diagnostics.append(ConfigDiagnostic(
                file: file, line: document.lines.headerLine(of: .init(name: "handler", element: nil))
                    ?? document.lines.line(of: "handler", in: .init(name: "", element: nil)),
                key: "handler", message: "expected [[handler]] (an array of tables), found \(TableReader.describe(value.type))"))
            return (handlers, diagnostics)
        }
        handlers.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            let section = TOMLLineIndex.Section(name: "handler", element: index)
            guard let table = element.table else {
                diagnostics.append(ConfigDiagnostic(file: file, line: document.lines.headerLine(of: section),
                                                    key: "handler", message: "each handler must be a table"))
                continue
            }
            var reader = TableReader(table: table, file: file, lines: document.lines, section: section, keyPrefix: "")
            if let handler = HandlerConfig.read(from: &reader, daemon: daemon) { handlers.append(handler) }
            diagnostics += reader.diagnostics
        }
        // Report in file order, as a person reads the file.
        return (handlers, diagnostics.enumerated().sorted {
            ($0.element.line ?? 0, $0.offset) < ($1.element.line ?? 0, $1.offset)
        }.map(\.element))
    }

    /// Keeps the first definition of each name; a later one is an error pointing at the first.
    private static func rejectDuplicates(_ handlers: inout [HandlerConfig], _ diagnostics: inout [ConfigDiagnostic]) {
        // Places, not copies: with 10,000 handlers a dictionary and a filtered array of their
        // configurations were the largest memory of the daemon's start.
        var firstPlace: [String: Int] = [:]
        firstPlace.reserveCapacity(handlers.count)
        var duplicates = Set<Int>()
        for index in handlers.indices {
            let name = handlers[index].name
            guard let firstIndex = firstPlace[name] else {
                firstPlace[name] = index
                continue
            }
            let (first, handler) = (handlers[firstIndex], handlers[index])
            diagnostics.append(ConfigDiagnostic(
                file: handler.sourceFile, line: handler.nameLine ?? handler.sourceLine, key: "name",
                message: "duplicate handler name \"\(handler.name)\"; it is already defined at \(first.sourceFile):\(first.nameLine ?? first.sourceLine ?? 0)",
                handler: handler.name))
            duplicates.insert(index)
        }
        guard !duplicates.isEmpty else { return }
        handlers = handlers.enumerated().filter { !duplicates.contains($0.offset) }.map(\.element)
    }

    /// A parsed file: its tables, and where each key is.
    struct ParsedDocument {
        let table: TOMLTable
        let lines: TOMLLineIndex

        /// Frees the parsed tree, once every value read from it is copied out. TOMLKit never
        /// deletes a parsed document (LebJe/TOMLKit#26), so without this every reload kept its
        /// files' trees for good: about 900 bytes a handler. Clearing the root table deletes
        /// every node under it; only the empty root stays.
        func release() { table.clear() }

        /// Whether the top level holds anything but `[[handler]]`, told by counting: TOMLKit's
        /// `keys` leaks every key it lists, so they are listed only when there is one to name.
        var hasKeysBesidesHandler: Bool { table.count > (table.contains(key: "handler") ? 1 : 0) }
    }

    private static func parse(file: String) -> (document: ParsedDocument?, diagnostics: [ConfigDiagnostic]) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            let reason = (error as NSError).localizedFailureReason ?? "\(error)"
            let exists = FileManager.default.fileExists(atPath: file)
            return (nil, [ConfigDiagnostic(file: file, line: nil, key: nil,
                message: exists ? "cannot read the file (\(reason)); check its permissions and encoding (UTF-8)"
                                : "the file does not exist")])
        }
        let lines = TOMLLineIndex(text)
        if let line = lines.malformedHeaderLine {
            return (nil, [ConfigDiagnostic(file: file, line: line, key: nil, message:
                "not valid TOML: a table header must start with a key (letters, digits, '-' or '_', or a quoted key)")])
        }
        do {
            let table = try TOMLTable(string: text)
            return (ParsedDocument(table: table, lines: lines), [])
        } catch let error as TOMLParseError {
            return (nil, [ConfigDiagnostic(file: file, line: error.source.begin.line, key: nil,
                                           message: "not valid TOML: \(error.description)")])
        } catch {
            return (nil, [ConfigDiagnostic(file: file, line: nil, key: nil, message: "not valid TOML: \(error)")])
        }
    }
}
