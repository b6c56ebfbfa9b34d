import CurlKit
import Crypto
import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Hashes a file while a transfer writes it, a few steps behind the writer.
///
/// Hashing a 1 GiB download afterwards would add seconds to every transfer; following the
/// writer overlaps the hashing with the network on the second core, and a resumed transfer
/// hashes its existing prefix the same way (it is simply "already written"). The file is read
/// back from the page cache. When the transfer starts the file again from byte 0 (the server
/// ignored the range, or the resource changed) the hash starts again too: `generation` tells.
struct FollowingHasher {
    /// The file being written.
    let path: String
    /// The writer's progress: how far the file is valid, and its restarts.
    let progress: TransferProgress
    /// How long to wait for the writer when the hasher has caught up.
    var idlePause: Duration = .milliseconds(20)

    /// What was hashed: the SHA-256 (lower-case hex) of the file's first `bytes` bytes.
    struct Digest: Sendable, Equatable {
        /// Lower-case hex.
        var hex: String
        /// How many bytes it covers.
        var bytes: Int
    }

    /// Follows the file until `finished()` says the writer is done and everything written is
    /// hashed, or until cancelled (nil). Fails when the file cannot be read.
    func follow(finished: @Sendable () -> Bool) async throws -> Digest? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let chunkBytes = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var offset = 0
        var generation = progress.generation
        while !Task.isCancelled {
            // Read `finished` before the size: a writer that is done has written all it will.
            let done = finished()
            let available = progress.bytesOnDisk
            if progress.generation != generation {
                (hasher, offset, generation) = (SHA256(), 0, progress.generation)
                continue
            }
            guard offset < available else {
                if done { return Digest(hex: HexText.lowercase(hasher.finalize()), bytes: offset) }
                try? await Task.sleep(for: idlePause)
                continue
            }
            let count = pread(fd, buffer.baseAddress, min(chunkBytes, available - offset), off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            guard count > 0 else {  // shorter than announced: a restart is truncating it
                try? await Task.sleep(for: idlePause)
                continue
            }
            // Bytes read while a restart truncated the file belong to the old download.
            guard progress.generation == generation else { continue }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += count
        }
        return nil
    }
}
