#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FetchdCore
import Foundation

/// The digest fetchd publishes with each snapshot (`meta.json`'s `sha256`).
public enum FileDigest {
    /// SHA-256 (lower-case hex) and size of a file, read in chunks so large snapshots stay cheap.
    public static func sha256(ofFile path: String) throws -> (digest: String, bytes: Int) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw DurableFile.Failure(operation: "open", path: path, code: errno) }
        defer { close(descriptor) }
        var hasher = SHA256()
        var bytes = 0
        // Plain read(2) into one buffer: most snapshots are small, and FileHandle allocated a
        // Data per read on every fetch.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)  // under malloc's mmap threshold
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw DurableFile.Failure(operation: "read", path: path, code: errno)
            }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            bytes += count
        }
        return (HexText.lowercase(hasher.finalize()), bytes)
    }
}
