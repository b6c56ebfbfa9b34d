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

    /// Whether a handler runs a program: an exec handler, a transfer's `on_complete`, or a
    /// failure alert (`on_failure`).
    public var runsPrograms: Bool {
        handlers.contains { $0.kind == .exec || $0.transfer?.onComplete != nil || $0.alertCommand(daemon: daemon) != nil }
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

/// Reads `fetchd.toml`, the drop-ins of its settings (`fetchd.toml.d/*.toml`) and its handler
/// files (`handlers.d/*.toml`).
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
        let trusted = TrustedReader()
        if requireMainFile || FileManager.default.fileExists(atPath: mainFile) {
            let read = trusted.read(mainFile)
            let parsed = parse(read, file: mainFile)
            stopping += (trustProblem(read, file: mainFile).map { [$0] } ?? []) + parsed.diagnostics
            mainDocument = parsed.document
        }
        let settings = readSettings(main: mainDocument, mainFile: mainFile, reader: trusted)
        daemon = settings.daemon
        stopping += settings.stopping
        let baseDirectory = PathName.directory(of: mainFile)
        let handlersDirectory = daemon.handlersDirectory.hasPrefix("/")
            ? daemon.handlersDirectory
            : (baseDirectory.isEmpty ? "." : baseDirectory) + "/" + daemon.handlersDirectory
        // Every file is checked before any is parsed, so that no secret is read for a
        // configuration that does not start (it is only being checked).
        let folder = readHandlerFolder(handlersDirectory, reader: trusted)
        stopping += (folder.problem.map { [$0] } ?? []) + folder.files.compactMap { trustProblem($1, file: $0) }
        daemon.readsSecrets = readsSecrets && stopping.isEmpty
        var (handlers, diagnostics) = loadHandlers(folder.files, daemon: daemon, reader: trusted)
        if let mainDocument, mainDocument.table["handler"] != nil {
            let (mainHandlers, mainDiagnostics) = readHandlers(in: mainDocument, file: mainFile, daemon: daemon,
                                                               reader: trusted, isHandlerFile: false)
            handlers.insert(contentsOf: mainHandlers, at: 0)
            diagnostics.insert(contentsOf: mainDiagnostics, at: 0)
        }
        rejectDuplicates(&handlers, &diagnostics)
        // An untrusted program or CA file stops the start, as an untrusted file does.
        stopping += diagnostics.filter { $0.effect == .stopsStart }
        diagnostics.removeAll { $0.effect == .stopsStart }
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
        // A drop-in of the main file is checked as fetchd reads it: with the main file and its other drop-ins.
        if let main = mainFile(ofDropIn: path) { return examineMain(main, requireMainFile: false) }
        // A drop-in is a file in a handlers.d folder, or one that holds nothing but [[handler]] tables.
        let folder = PathName.lastComponent(of: PathName.directory(of: path))
        let inHandlersFolder = folder == Defaults.handlersDirectoryName
        let reader = TrustedReader()
        let read = reader.read(path)
        // A file fetchd may not trust is not read: outside a handler folder it is taken as a main file.
        if case .untrusted = read, !inHandlersFolder { return examineMain(path, requireMainFile: requireMainFile) }
        // fetchd refuses to start on a handler file (or its folder) it may not trust.
        var untrusted: [ConfigDiagnostic] = []
        if inHandlersFolder, case .untrusted(let why)? = reader.openFolder(PathName.directory(of: path)).problem {
            untrusted.append(ConfigDiagnostic(file: PathName.directory(of: path), line: nil, key: nil, message: why).stoppingStart())
        }
        untrusted += trustProblem(read, file: path).map { [$0] } ?? []
        let parsed = parse(read, file: path)
        guard let document = parsed.document else {
            let diagnostics = inHandlersFolder ? parsed.diagnostics : parsed.diagnostics.map { $0.stoppingStart() }
            return Examination(diagnostics: untrusted + diagnostics)
        }
        defer { document.release() }
        let onlyHandlers = document.table.count > 0 && !document.hasKeysBesidesHandler
        guard inHandlersFolder || (onlyHandlers && PathName.lastComponent(of: path) != "fetchd.toml") else {
            return examineMain(path, requireMainFile: requireMainFile)
        }
        var (handlers, diagnostics) = readHandlers(in: document, file: path, daemon: DaemonConfig(), reader: reader)
        rejectDuplicates(&handlers, &diagnostics)
        return Examination(diagnostics: untrusted + diagnostics)
    }

    private static func examineMain(_ path: String, requireMainFile: Bool) -> Examination {
        let reading = read(mainFile: path, requireMainFile: requireMainFile, readsSecrets: true)
        return Examination(diagnostics: reading.stopping + reading.config.diagnostics)
    }

    /// Loads the handler files `files` (`handlerFiles(in:)`), in that order, each checked
    /// (`TrustedReader`): a file fetchd may not trust is a problem that stops the start.
    static func loadHandlers(_ files: [String], daemon: DaemonConfig) -> ([HandlerConfig], [ConfigDiagnostic]) {
        let reader = TrustedReader()
        let reads = files.map { ($0, reader.read($0)) }
        let (handlers, diagnostics) = loadHandlers(reads, daemon: daemon, reader: reader)
        return (handlers, reads.compactMap { trustProblem($1, file: $0) } + diagnostics)
    }

    /// Loads the handler files read (`readHandlerFolder`), in that order; those fetchd may not
    /// trust are left out (the caller reports them, `trustProblem`).
    static func loadHandlers(_ files: [(String, TrustedReader.Read)], daemon: DaemonConfig,
                             reader: TrustedReader) -> ([HandlerConfig], [ConfigDiagnostic]) {
        var handlers: [HandlerConfig] = []
        var diagnostics: [ConfigDiagnostic] = []
        for (file, read) in files {
            let parsed = parse(read, file: file)
            guard let document = parsed.document else { diagnostics += parsed.diagnostics; continue }
            defer { document.release() }
            let (found, problems) = readHandlers(in: document, file: file, daemon: daemon, reader: reader)
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

    /// The handlers of `document` and its problems; a program or CA file a handler names that
    /// fetchd may not trust is a problem that stops the start, and leaves the handler out.
    private static func readHandlers(in document: ParsedDocument, file: String, daemon: DaemonConfig,
                                     reader trustedReader: TrustedReader, isHandlerFile: Bool = true) -> ([HandlerConfig], [ConfigDiagnostic])
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
            var tableReader = TableReader(table: table, file: file, lines: document.lines, section: section, keyPrefix: "")
            let handler = HandlerConfig.read(from: &tableReader, daemon: daemon)
            diagnostics += tableReader.diagnostics
            guard let handler else { continue }
            let untrusted = trustedReader.namedFileProblems(of: handler, daemon: daemon, file: file,
                                                            lines: document.lines, section: section)
            if untrusted.isEmpty { handlers.append(handler) } else { diagnostics += untrusted.map { $0.stoppingStart() } }
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
}
