import CurlKit
import FetchdCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension BackgroundTransfer {
    /// What a download returns.
    typealias Download = @Sendable () async -> Result<HTTPResponse, HTTPFailure>

    /// Runs `download` (nil: the file is already whole) while hashing the partial file behind
    /// it; returns the download's result and the digest of everything written (or why the file
    /// could not be read).
    func hash(_ files: Files, progress: TransferProgress, whileDownloading download: Download?) async
        -> (Result<HTTPResponse, HTTPFailure>?, Result<FollowingHasher.Digest?, Error>)
    {
        enum Event: Sendable {
            case downloaded(Result<HTTPResponse, HTTPFailure>)
            case hashed(Result<FollowingHasher.Digest?, Error>)
        }
        let hasher = FollowingHasher(path: files.partial, progress: progress)
        let done = DoneFlag()
        if download == nil { done.set() }
        return await withTaskGroup(of: Event.self) { group in
            group.addTask {
                do { return .hashed(.success(try await hasher.follow(finished: { done.isSet }))) } catch { return .hashed(.failure(error)) }
            }
            if let download {
                group.addTask {
                    let result = await download()
                    done.set()
                    return .downloaded(result)
                }
            }
            var response: Result<HTTPResponse, HTTPFailure>?
            var digest: Result<FollowingHasher.Digest?, Error> = .success(nil)
            while let event = await group.next() {
                switch event {
                case .downloaded(let result):
                    response = result
                    if case .failure = result { group.cancelAll() }  // nothing to verify
                case .hashed(let result):
                    digest = result
                    if case .failure = result { group.cancelAll() }  // no point downloading what cannot be verified
                }
            }
            return (response, digest)
        }
    }

    /// Checks a downloaded file against the announced size and the expected digest.
    func verify(_ files: Files, digest: Result<FollowingHasher.Digest?, Error>, response: HTTPResponse?,
                resumedFrom offset: Int, saved: TransferResumeRecord?) -> Attempt {
        let onDisk = Self.size(of: files.partial)
        let hashed: FollowingHasher.Digest
        switch digest {
        case .failure(let error):
            return .finished(.failed(reason: "cannot read the downloaded file to verify it: \(error)", answer: nil,
                                     keptBytes: onDisk))
        case .success(nil):
            return .finished(.interrupted(keptBytes: onDisk))
        case .success(let value?):
            hashed = value
        }
        guard hashed.bytes == onDisk else {
            // The file changed behind the hasher (not by fetchd): its bytes cannot be trusted.
            discard(files)
            return .finished(.failed(reason: "the partial file changed while it was verified; starting afresh",
                                     answer: nil, keptBytes: 0))
        }
        let total = response?.totalBytes ?? saved?.totalBytes
        if let total, total != onDisk, response?.status != 416 {
            return .finished(.failed(reason: "incomplete: \(onDisk) of \(total) bytes; it resumes from there",
                                     answer: nil, keptBytes: onDisk))
        }
        if let expected = expectedSHA256, expected != hashed.hex {
            discard(files)
            return .finished(.failed(reason: "checksum mismatch: the file's SHA-256 is \(hashed.hex), expected \(expected); the download starts afresh next time",
                                     answer: nil, keptBytes: 0))
        }
        var details = ["request_url": url, "resumed_from": String(offset)]
        if let response {
            details["status"] = String(response.status)
            details["final_url"] = response.effectiveURL
            if let version = response.httpVersion { details["http_version"] = version }
            details["download_ms"] = String(response.totalMilliseconds)
            details["downloaded_bytes"] = String(response.bodyOffset == nil ? 0 : onDisk - (response.bodyOffset ?? 0))
        } else {
            details["downloaded_bytes"] = "0"
        }
        let contentType = response?.contentType ?? saved?.contentType
        // The validators of the file now in hand, for the next transfer's conditional request.
        let answer = response.map { ServerAnswer(validators: ServerAnswer.validators(in: $0.headers)) }
        return .finished(.complete(Completed(sha256: hashed.hex, bytes: onDisk, contentType: contentType, details: details,
                                             answer: answer)))
    }

    /// A transfer that libcurl ended: kept for the next run unless its bytes are useless.
    func failed(_ error: HTTPFailure, files: Files, progress: TransferProgress) -> Attempt {
        switch error {
        case .cancelled:
            return .finished(.interrupted(keptBytes: progress.bytesOnDisk))
        case .rangeMismatch:
            return .startAfresh
        case .tooLarge, .forbiddenScheme, .forbiddenRedirect, .forbiddenAddress, .tooManyRedirects:
            discard(files)
            return .finished(.failed(reason: error.description, answer: nil, keptBytes: 0))
        default:
            let kept = progress.bytesOnDisk
            let total = progress.totalBytes.map { " of \($0)" } ?? ""
            let reason = kept > 0 ? "\(error.description) (interrupted at \(kept)\(total) bytes; it resumes from there)"
                : error.description
            return .finished(.failed(reason: reason, answer: nil, keptBytes: kept))
        }
    }

    /// The size of the file at `path`, 0 when there is none.
    public static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}

/// A one-way flag shared by a download and the hasher following it.
private final class DoneFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
