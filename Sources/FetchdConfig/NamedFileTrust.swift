import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension TrustedReader {
    /// The problems with the files `handler` (read from `section` of `file`) names for fetchd
    /// to run or trust: an exec handler's program (`command`), a transfer's `on_complete`
    /// program and a `ca_file`, each at its key. A program is the file its command runs: a path
    /// as written, or a bare name looked up in the handler's `PATH` as it will be when it runs,
    /// where every folder searched before the one holding it must pass too (whoever can write
    /// one of them could put a program of that name in first). Files that do not exist are
    /// not this check's to report: a missing program fails when it is run, a missing CA file
    /// is reported where `ca_file` is read.
    func namedFileProblems(of handler: HandlerConfig, file: String, lines: TOMLLineIndex,
                           section: TOMLLineIndex.Section) -> [ConfigDiagnostic] {
        var named: [(key: String, what: String, problem: String?)] = []
        if let program = handler.program?.command.first {
            named.append(("command", "the program", programProblem(program, environment: handler.environment)))
        }
        if let program = handler.transfer?.onComplete?.first {
            named.append(("on_complete", "the program", programProblem(program, environment: handler.environment)))
        }
        if let caFile = handler.request?.caFile {
            named.append(("ca_file", "the CA file", namedFileProblem(caFile)))
        }
        return named.compactMap { key, what, problem in
            problem.map {
                ConfigDiagnostic(file: file, line: lines.line(of: key, in: section), key: key,
                                 message: "\(what) may not be trusted: \($0)", handler: handler.name)
            }
        }
    }

    /// Why the program a command names may not be trusted (`namedFileProblems(of:)`), nil when
    /// it may or is not found.
    private func programProblem(_ program: String, environment: [String: String]) -> String? {
        if program.contains("/") { return namedFileProblem(program) }
        let searchPath = environment["PATH"] ?? Defaults.programSearchPath
        for folder in searchPath.split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(program)"
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return namedFileProblem(candidate)
            }
            let fd = open(String(folder), TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if let problem = folderProblem(fd) {
                return "\(program) is looked up in PATH (\(searchPath)) through \(problem)"
            }
        }
        return nil
    }
}
