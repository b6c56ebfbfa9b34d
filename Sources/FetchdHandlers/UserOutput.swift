import Crypto
import FetchdCore

#if canImport(Glibc)
import Glibc
#endif

/// Takes over what a program running as another user (`user = "NAME"`) wrote to `FETCHD_OUTPUT`.
///
/// The taker is root (fetchd-runas, or a fetchd run as root without it), so nothing about that
/// file is trusted: it is opened
/// without following a symlink, checked on the open descriptor (a regular file with one name,
/// owned by that user), and its bytes are *copied* into a file fetchd creates. The user's file
/// is never renamed, chmod'ed or chown'ed: a hard link planted there cannot get a third user's
/// file re-owned or its set-id bits cleared, and a descriptor the program kept open writes to
/// the user's file, never to what fetchd publishes. Only the size seen at the check is copied, so
/// a process still writing cannot make the copy endless, and a file over the handler's
/// `max_bytes` is refused before anything is copied (a sparse file of terabytes costs its user
/// nothing; fetchd writing it out as root would fill the disk past the user's quota). The user's
/// name for it is removed.
public enum UserOutput {
    /// What `take` did.
    public enum Taken: Equatable {
        /// The program wrote nothing there.
        case nothing
        /// Copied to the output path; the copy's SHA-256 (lower-case hex) and size.
        case copied(FetchContext.ContentDigest)
        /// Not taken; why, in words for the fetch's failure reason.
        case refused(String)
    }

    /// The copy's read size, in bytes.
    static let chunkBytes = 64 * 1024

    /// Copies the file at `written` (the user's) to `output` (created here, fetchd's, 0644) after
    /// checking that it is a regular file with a single link owned by `user`; removes `written`.
    static func take(from written: String, to output: String, user: UserAccount, maxBytes: Int) -> Taken {
        // O_NONBLOCK: a FIFO planted there must not block the open (it fails the check below).
        let source = open(written, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard source >= 0 else {
            let code = errno
            if code == ENOENT { return .nothing }
            unlink(written)
            if code == ELOOP { return .refused("FETCHD_OUTPUT is a symbolic link: write the snapshot itself there") }
            return .refused("cannot open FETCHD_OUTPUT (\(written)): \(String(cString: strerror(code)))")
        }
        defer {
            close(source)
            unlink(written)
        }
        var info = stat()
        guard fstat(source, &info) == 0 else {
            return .refused("cannot check FETCHD_OUTPUT (\(written)): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return .refused("FETCHD_OUTPUT is not a regular file: write the snapshot itself there")
        }
        guard info.st_nlink == 1 else {
            return .refused("FETCHD_OUTPUT has \(info.st_nlink) names (a hard link?): write a new file there")
        }
        guard info.st_uid == user.uid else {
            return .refused("FETCHD_OUTPUT belongs to uid \(info.st_uid), not to \(user.name) (uid \(user.uid))")
        }
        guard Int(info.st_size) <= maxBytes else {
            return .refused("FETCHD_OUTPUT is \(info.st_size) bytes, over max_bytes (\(maxBytes))")
        }
        return copy(source, bytes: Int(info.st_size), to: output)
    }

    /// Copies the first `bytes` bytes of `source` to a new file at `output`, hashing them.
    public static func copy(_ source: Int32, bytes: Int, to output: String) -> Taken {
        let target = open(output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard target >= 0 else {
            return .refused("cannot create \(output) for the snapshot: \(String(cString: strerror(errno)))")
        }
        defer { close(target) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        var copied = 0
        while copied < bytes {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, min($0.count, bytes - copied)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // Shortened while being copied: what was there when it was checked is gone.
                unlink(output)
                let why = count == 0 ? "it shrank while being copied" : String(cString: strerror(errno))
                return .refused("cannot read FETCHD_OUTPUT: \(why)")
            }
            let failure: Int32? = buffer.withUnsafeBytes { chunk in
                var offset = 0
                while offset < count {
                    let done = write(target, chunk.baseAddress! + offset, count - offset)
                    if done < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += done
                }
                return nil
            }
            if let failure {
                unlink(output)
                return .refused("cannot write the snapshot to \(output): \(String(cString: strerror(failure)))")
            }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            copied += count
        }
        return .copied(.init(sha256: HexText.lowercase(Array(hasher.finalize())), bytes: copied))
    }
}
