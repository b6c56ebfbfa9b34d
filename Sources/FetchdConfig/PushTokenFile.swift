import FetchdCore
import Foundation

/// A handler's push token, read from a file of its own (`push_token_file`) that only fetchd's
/// user may read: checked as ssh checks a private key.
enum PushTokenFile {
    /// The largest file read (a token is a line of a few dozen characters).
    static let maxBytes = 4096

    /// Why a push token file was refused.
    enum Problem: Error, CustomStringConvertible {
        /// The file does not exist.
        case missing(String)
        /// The file cannot be read (the reason follows the path).
        case unreadable(String, String)
        /// Group or others may access the file.
        case exposed(String, mode: UInt16)
        /// The token could be guessed (`PushTokenStrength`); why follows the path.
        case weak(String, String)
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
            case .weak(let path, let reason):
                "the token in \"\(path)\" is too easy to guess: \(reason); a token needs \(Defaults.pushTokenMinBits) bits of "
                    + "entropy, e.g. 32 random hexadecimal digits: write a new one with openssl rand -hex 16 "
                    + "(or head -c 16 /dev/urandom | base64)"
            case .badCharacters(let path):
                "the token in \"\(path)\" holds spaces or characters other than visible ASCII; it is sent in an HTTP header "
                    + "(make one with openssl rand -hex 16)"
            }
        }
    }

    /// The token in `path` (surrounding whitespace and the final newline removed), if the file
    /// exists, is a regular file (not a symlink) owned by root or fetchd's own user that only its
    /// owner may access, and holds a token hard enough to guess (`PushTokenStrength`: at least
    /// `Defaults.pushTokenMinBits` bits of entropy). Checked and read through one descriptor,
    /// so the file read is the file checked.
    static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let problem: Problem = switch errno {
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
        guard info.st_size <= Self.maxBytes else {
            return .failure(.unreadable(path, "larger than \(Self.maxBytes) bytes: not a token file"))
        }
        let data = FileHandle(fileDescriptor: fd, closeOnDealloc: false).readDataToEndOfFile()
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // It travels in an Authorization header: visible ASCII only.
        guard token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            return .failure(.badCharacters(path))
        }
        if let weakness = PushTokenStrength(token).weakness { return .failure(.weak(path, weakness)) }
        return .success(token)
    }
}

extension String {
    /// The string with leading zeros up to `width` characters (`640` -> `0640`).
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
