import CPosixShim
import CurlKit
import Crypto
import FetchdCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Hashes a file while a transfer writes it, a few steps behind the writer.
///
/// Hashing a 1 GiB download afterwards would add seconds to every transfer; following the
/// writer overlaps the hashing with the network, and a resumed transfer hashes its existing
/// prefix the same way (it is simply "already written"). The file is read back from the page
/// cache. When the transfer starts the file again from byte 0 (the server ignored the range, or
/// the resource changed) the hash starts again too: `generation` tells.
///
/// The hashing runs on a thread of its own at the lowest priority (nice 19): on a busy machine
/// it must not slow the download it follows (nor anything else), only use spare CPU time; it
/// catches up once the download ends. That thread is a blocking loop, which Swift's cooperative
/// pool must never run.
struct FollowingHasher: Sendable {
    /// The file being written.
    let path: String
    /// The writer's progress: how far the file is valid, and its restarts.
    let progress: TransferProgress
    /// How long to wait for the writer when the hasher has caught up, in microseconds.
    var idlePauseMicroseconds: UInt32 = 20_000

    /// What was hashed: the SHA-256 (lower-case hex) of the file's first `bytes` bytes.
    struct Digest: Sendable, Equatable {
        /// Lower-case hex.
        var hex: String
        /// How many bytes it covers.
        var bytes: Int
    }

    /// Follows the file until `finished()` says the writer is done and everything written is
    /// hashed (the digest), or until the calling task is cancelled (nil). Fails when the file
    /// cannot be read.
    func follow(finished: @escaping @Sendable () -> Bool) async throws -> Digest? {
        let cancelled = Atomic<Bool>(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Digest?, Error>) in
                let thread = Thread {
                    _ = fetchd_name_this_thread("fetchd-hash")
                    _ = fetchd_nice_this_thread(19)
                    continuation.resume(with: Result { try hash(finished: finished, cancelled: { cancelled.load(ordering: .relaxed) }) })
                }
                thread.start()
            }
        } onCancel: {
            cancelled.store(true, ordering: .relaxed)
        }
    }

    /// The blocking loop, on the hasher's own thread.
    private func hash(finished: () -> Bool, cancelled: () -> Bool) throws -> Digest? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let chunkBytes = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var offset = 0
        var generation = progress.generation
        while !cancelled() {
            // Read `finished` before the size: a writer that is done has written all it will.
            let done = finished()
            let available = progress.bytesOnDisk
            if progress.generation != generation {
                (hasher, offset, generation) = (SHA256(), 0, progress.generation)
                continue
            }
            guard offset < available else {
                if done { return Digest(hex: HexText.lowercase(hasher.finalize()), bytes: offset) }
                usleep(idlePauseMicroseconds)
                continue
            }
            let count = pread(fd, buffer.baseAddress, min(chunkBytes, available - offset), off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            guard count > 0 else {  // shorter than announced: a restart is truncating it
                usleep(idlePauseMicroseconds)
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
