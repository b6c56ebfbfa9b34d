import Foundation
import TOMLKit

extension ConfigLoader {
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

    /// The handler files of the folder `path` (`*.toml`, not hidden, in name order), each
    /// opened through the folder's descriptor and read if fetchd may trust it; and why the
    /// folder itself may not be trusted, if so. A missing folder has no files.
    static func readHandlerFolder(_ path: String,
                                  reader: TrustedReader) -> (files: [(String, TrustedReader.Read)], problem: ConfigDiagnostic?) {
        let (folder, problem) = reader.openFolder(path)
        guard let folder else {
            guard case .untrusted(let why) = problem else { return ([], nil) }
            return ([], ConfigDiagnostic(file: path, line: nil, key: nil, message: why))
        }
        let names = reader.names(in: folder).sorted().filter { $0.hasSuffix(".toml") && !$0.hasPrefix(".") }
        return (names.map { (path + "/" + $0, reader.read(named: $0, in: folder.fd, path: path + "/" + $0)) }, nil)
    }

    /// The trust problem of a file read, if it is one: it stops fetchd's start.
    static func trustProblem(_ read: TrustedReader.Read, file: String) -> ConfigDiagnostic? {
        guard case .untrusted(let why) = read else { return nil }
        return ConfigDiagnostic(file: file, line: nil, key: nil, message: why).stoppingStart()
    }

    /// `file` parsed from what reading it gave; a file fetchd may not trust is not parsed (its
    /// problem is reported by the caller, `trustProblem`).
    static func parse(_ read: TrustedReader.Read, file: String) -> (document: ParsedDocument?, diagnostics: [ConfigDiagnostic]) {
        let text: String
        switch read {
        case .text(let read): text = read
        case .untrusted: return (nil, [])
        case .missing: return (nil, [ConfigDiagnostic(file: file, line: nil, key: nil, message: "the file does not exist")])
        case .unreadable(let reason):
            return (nil, [ConfigDiagnostic(file: file, line: nil, key: nil,
                message: "cannot read the file (\(reason)); check its permissions and encoding (UTF-8)")])
        case .malformed(let problem):
            return (nil, [ConfigDiagnostic(file: file, line: problem.line, key: nil, message: problem.message)])
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
