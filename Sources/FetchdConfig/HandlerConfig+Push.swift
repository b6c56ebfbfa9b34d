import FetchdCore
import Foundation

extension HandlerConfig {
    /// Reads `push_limit` and `push_token_file`.
    ///
    /// The token lives in a file of its own, never inline in the config: config files are
    /// installed world-readable (0644) and are copied, diffed and pasted into bug reports; a
    /// file that only the daemon's user can read keeps the secret apart (and works with
    /// systemd's `LoadCredential=`). A token file that group or others may read or write is
    /// refused, as ssh refuses such a private key.
    mutating func readPushOptions(_ reader: inout TableReader, readsSecrets: Bool) {
        if let text = reader.string("push_limit") {
            if let limit = PushLimit.parse(text) {
                pushLimit = limit
            } else {
                reader.report("push_limit", "\"\(text)\" is not a push limit; expected e.g. \"6/hour\", \"2/minute\", \"20/day\" or \"1/10s\" (1 to \(PushLimit.maxCount) per window of 1s to 1d)")
            }
        }
        if let path = reader.string("push_token_file"), readsSecrets {
            switch Self.readPushToken(path) {
            case .success(let token): pushToken = token
            case .failure(let problem): reader.report("push_token_file", problem.description)
            }
        }
    }

    /// The largest push token file read (a token is a line of a few dozen characters).
    static let pushTokenFileMaxBytes = 4096

    /// Why a push token file was refused.
    enum PushTokenProblem: Error, CustomStringConvertible {
        /// The file does not exist.
        case missing(String)
        /// The file cannot be read (the reason follows the path).
        case unreadable(String, String)
        /// Group or others may access the file.
        case exposed(String, mode: UInt16)
        /// The token is too short to be secret.
        case tooShort(String)
        /// The token cannot travel in an HTTP header.
        case badCharacters(String)

        /// What is wrong and what to do.
        var description: String {
            switch self {
            case .missing(let path):
                "\"\(path)\" does not exist; expected a file holding the push token"
            case .unreadable(let path, let reason):
                "\"\(path)\" cannot be read by uid \(getuid()) (\(reason)); it must be readable by the user fetchd runs as"
            case .exposed(let path, let mode):
                "\"\(path)\" has mode \(String(mode, radix: 8, uppercase: false).leftPadded(to: 4)): group or others may read or write it; a token must be secret (chmod 600 and chown it to the user fetchd runs as)"
            case .tooShort(let path):
                "the token in \"\(path)\" is shorter than \(Defaults.pushTokenMinLength) characters; make a long random one, e.g. openssl rand -hex 32"
            case .badCharacters(let path):
                "the token in \"\(path)\" holds spaces or characters other than visible ASCII; it is sent in an HTTP header (e.g. openssl rand -hex 32)"
            }
        }
    }

    /// The token in `path` (surrounding whitespace and the final newline removed), if the file
    /// exists, is a regular file (not a symlink) owned by root or fetchd's own user that only its
    /// owner may access, and holds a long enough token. Checked and read through one descriptor,
    /// so the file read is the file checked.
    static func readPushToken(_ path: String) -> Result<String, PushTokenProblem> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let problem: PushTokenProblem = switch errno {
            case ENOENT: .missing(path)
            case ELOOP: .unreadable(path, "a symbolic link; name the file itself")
            default: .unreadable(path, String(cString: strerror(errno)))
            }
            return .failure(problem)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(.unreadable(path, String(cString: strerror(errno)))) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .failure(.unreadable(path, "not a regular file")) }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            return .failure(.unreadable(path, "owned by uid \(info.st_uid), not by root or the user fetchd runs as"))
        }
        let permissions = UInt16(info.st_mode & 0o7777)
        guard permissions & 0o077 == 0 else { return .failure(.exposed(path, mode: permissions)) }
        guard info.st_size <= Self.pushTokenFileMaxBytes else {
            return .failure(.unreadable(path, "larger than \(Self.pushTokenFileMaxBytes) bytes: not a token file"))
        }
        let data = FileHandle(fileDescriptor: fd, closeOnDealloc: false).readDataToEndOfFile()
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= Defaults.pushTokenMinLength else { return .failure(.tooShort(path)) }
        // It travels in an Authorization header: visible ASCII only.
        guard token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            return .failure(.badCharacters(path))
        }
        return .success(token)
    }
}

extension String {
    /// The string with leading zeros up to `width` characters (`640` -> `0640`).
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
