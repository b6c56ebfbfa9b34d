import FetchdCore
import Foundation

extension ConfigLoader {
    /// The drop-in folder of the main file: `fetchd.toml.d` beside `fetchd.toml` (the main
    /// file's path with ".d"), as apt has `apt.conf.d` and systemd `system.conf.d`.
    public static func mainDropInFolder(of mainFile: String) -> String { mainFile + ".d" }

    /// The daemon's settings: the main file's (`main`, nil when it does not exist), then each
    /// drop-in of `mainDropInFolder` in name order (`*.toml`, not hidden), each read over what
    /// the files before it set, so a later file wins key by key. A drop-in is read as the main
    /// file is, with the same trust checks as a handler file; it holds settings only. Returns the
    /// settings and every problem, each naming its own file, line and key: all of them stop a
    /// start, as the main file's do.
    static func readSettings(main: ParsedDocument?, mainFile: String,
                             reader trusted: TrustedReader) -> (daemon: DaemonConfig, stopping: [ConfigDiagnostic]) {
        let root = TOMLLineIndex.Section(name: "", element: nil)
        var daemon = DaemonConfig()
        var stopping: [ConfigDiagnostic] = []
        // The file that set `on_failure` last: its program is checked at its line there.
        var alertFile: (path: String, lines: TOMLLineIndex)?
        if let main {
            var reader = TableReader(table: main.table, file: mainFile, lines: main.lines, section: root)
            daemon = DaemonConfig.read(from: &reader)
            stopping += reader.diagnostics
            if reader.holds("on_failure") { alertFile = (mainFile, main.lines) }
        }
        let folder = readHandlerFolder(mainDropInFolder(of: mainFile), reader: trusted)
        stopping += (folder.problem.map { [$0] } ?? []) + folder.files.compactMap { trustProblem($1, file: $0) }
        for (file, read) in folder.files {
            let parsed = parse(read, file: file)
            stopping += parsed.diagnostics
            guard let document = parsed.document else { continue }
            defer { document.release() }
            var reader = TableReader(table: document.table, file: file, lines: document.lines, section: root)
            daemon = DaemonConfig.read(from: &reader, over: daemon)
            stopping += reader.diagnostics
            if reader.holds("on_failure") { alertFile = (file, document.lines) }
            if reader.holds("handler") {
                let line = document.lines.headerLine(of: .init(name: "handler", element: 0))
                    ?? document.lines.line(of: "handler", in: root)
                stopping.append(ConfigDiagnostic(
                    file: file, line: line, key: "handler",
                    message: "a drop-in of the main file holds settings only; put [[handler]] tables in a file of "
                        + "the handler folder (handlers_dir, \(Defaults.handlersDirectoryName) by default)"))
            }
        }
        if let alertFile, let problem = trusted.alertProgramProblem(of: daemon, file: alertFile.path, lines: alertFile.lines) {
            stopping.append(problem)
        }
        return (daemon, stopping)
    }

    /// For a file in a main file's drop-in folder (`fetchd.toml.d/alerts.toml`): that main file,
    /// which `--check-config` examines whole, the drop-in among its files. Nil for any other file.
    static func mainFile(ofDropIn path: String) -> String? {
        let folder = PathName.directory(of: path)
        guard folder.hasSuffix(".toml.d") else { return nil }
        return String(folder.dropLast(2))
    }
}
