import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension TrustedReader {
    /// The problems with the files `handler` (read from `section` of `file`) names for fetchd
    /// to run or trust: an exec handler's program (`command`), a transfer's `on_complete`
    /// program, the program its failure alerts run and a `ca_file`, each at its key. A program
    /// is the file its command runs: a path as written, or a bare name looked up in the
    /// handler's `PATH` as it will be when it runs, where every folder searched before the one
    /// holding it must pass too (whoever can write one of them could put a program of that
    /// name in first). The alert program is the handler's own `on_failure`, else `daemon`'s
    /// (the main file's) when the handler's `environment` sets the `PATH` it is looked up in,
    /// reported at `environment`. Files that do not exist are not this check's to report: a
    /// missing program fails when it is run, a missing CA file is reported where `ca_file` is read.
    func namedFileProblems(of handler: HandlerConfig, daemon: DaemonConfig, file: String, lines: TOMLLineIndex,
                           section: TOMLLineIndex.Section) -> [ConfigDiagnostic] {
        var named: [(key: String, what: String, problem: String?)] = []
        let searchPath = handler.environment["PATH"] ?? Defaults.programSearchPath
        if let program = handler.program?.command.first {
            named.append(("command", "the program", remembered(program, searchPath) { programProblem(program, searchPath) }))
        }
        if let program = handler.transfer?.onComplete?.first {
            named.append(("on_complete", "the program", remembered(program, searchPath) { programProblem(program, searchPath) }))
        }
        if let program = handler.onFailure?.first {
            named.append(("on_failure", "the program", remembered(program, searchPath) { programProblem(program, searchPath) }))
        } else if handler.registeredBy == nil, handler.environment["PATH"] != nil,
                  let program = handler.alertCommand(daemon: daemon)?.first, !program.contains("/") {
            // The main file's program runs with this handler's environment, and so its PATH
            // (the main file's own check looks it up in the default one).
            named.append(("environment", "the main file's on_failure program, run with this handler's PATH,",
                          remembered(program, searchPath) { programProblem(program, searchPath) }))
        }
        if let caFile = handler.request?.caFile {
            named.append(("ca_file", "the CA file", remembered(caFile, nil) { namedFileProblem(caFile) }))
        }
        return named.compactMap { key, what, problem in
            problem.map {
                ConfigDiagnostic(file: file, line: lines.line(of: key, in: section), key: key,
                                 message: "\(what) may not be trusted: \($0)", handler: handler.name)
            }
        }
    }

    /// The problem with the main file's `on_failure` program (looked up in the default `PATH`:
    /// a handler's `environment` may set another, which `namedFileProblems` checks it in), if
    /// any, at its key in `file`.
    func alertProgramProblem(of daemon: DaemonConfig, file: String, lines: TOMLLineIndex) -> ConfigDiagnostic? {
        guard let program = daemon.onFailure?.first else { return nil }
        let searchPath = Defaults.programSearchPath
        guard let problem = remembered(program, searchPath, { programProblem(program, searchPath) }) else { return nil }
        let section = TOMLLineIndex.Section(name: "", element: nil)
        return ConfigDiagnostic(file: file, line: lines.line(of: "on_failure", in: section), key: "on_failure",
                                message: "the program may not be trusted: \(problem)")
    }

    /// `check()`'s answer for `name` (looked up in `searchPath` when it is a bare program name),
    /// found once per reader.
    private func remembered(_ name: String, _ searchPath: String?, _ check: () -> String?) -> String? {
        let key = name.contains("/") ? name : searchPath.map { $0 + "\0" + name } ?? name
        if let known = namedFiles[key] { return known }
        let verdict = check()
        namedFiles[key] = .some(verdict)
        return verdict
    }

    /// Why the program a command names may not be trusted (`namedFileProblems(of:)`), looked up
    /// in `searchPath` when it is a bare name; nil when it may or is not found.
    private func programProblem(_ program: String, _ searchPath: String) -> String? {
        if program.contains("/") { return namedFileProblem(program) }
        for folder in searchPath.split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(program)"
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return namedFileProblem(candidate)
            }
            let fd = open(String(folder), TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else {
                // A folder that does not exist yet is as good as the one that would hold it:
                // whoever can create it there can put the program in first.
                if let problem = missingFolderProblem(String(folder)) {
                    return "\(program) is looked up in PATH (\(searchPath)) through \(folder), which does not exist, "
                        + "below \(problem)"
                }
                continue
            }
            defer { close(fd) }
            if let problem = folderProblem(fd) {
                return "\(program) is looked up in PATH (\(searchPath)) through \(problem)"
            }
        }
        return nil
    }

    /// For a `PATH` folder that does not exist: the problem with the nearest folder above it
    /// that does (`folderProblem`), or nil when that one may be trusted.
    private func missingFolderProblem(_ folder: String) -> String? {
        var path = folder
        while let slash = path.lastIndex(of: "/") {
            path = slash == path.startIndex ? "/" : String(path[..<slash])
            let fd = open(path, TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                return folderProblem(fd)
            }
            guard errno == ENOENT || errno == ENOTDIR, path != "/" else { return nil }
        }
        return nil
    }
}
