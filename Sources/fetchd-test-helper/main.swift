// Test-only tool. `fetchd-test-helper local-time EPOCH...`: see below.
// `fetchd-test-helper snapshot-writer CACHE HANDLER SEED` commits snapshots of
// random size and content to CACHE in an endless loop, so a test can SIGKILL it at arbitrary
// moments and then check that no reader could ever see a torn snapshot.
import FetchdCore
import FetchdSnapshots
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
// `fetchd-test-helper local-time EPOCH...`: SystemTimeZone's view of each moment, one line each
// (`OFFSET HH:mm HH:mm:ss`), so a test can run it under another `TZ` than its own.
if arguments.count >= 2, arguments[1] == "local-time" {
    for epoch in arguments.dropFirst(2) {
        let date = Date(timeIntervalSince1970: Double(epoch) ?? 0)
        print(SystemTimeZone.secondsFromGMT(at: date), SystemTimeZone.hourMinute(date), SystemTimeZone.hourMinuteSecond(date))
    }
    exit(0)
}
guard arguments.count == 5, arguments[1] == "snapshot-writer", let seed = UInt64(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: fetchd-test-helper snapshot-writer CACHE HANDLER SEED\n".utf8))
    exit(2)
}
let handler = arguments[3]
var generator = SplitMix64(seed: seed)
do {
    let store = try SnapshotStore(root: arguments[2])
    while true {
        // Sizes from 1 KiB to 512 KiB so that kills land in every phase: writing, fsync, rename, link swap.
        let size = 1024 + Int(generator.next() % (512 * 1024))
        // Both ways in: written in its version folder (http), or moved into one (programs).
        let staged = generator.next() % 2 == 0 ? try store.staging.versionPath(for: handler) : store.staging.path(for: handler)
        let fd = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var remaining = size
        while remaining > 0 {
            let count = min(remaining, chunk.count)
            chunk.withUnsafeMutableBytes { bytes in
                for word in 0..<(count + 7) / 8 where word * 8 + 8 <= bytes.count {
                    bytes.storeBytes(of: generator.next(), toByteOffset: word * 8, as: UInt64.self)
                }
            }
            _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, count) }
            remaining -= count
        }
        close(fd)
        let template = SnapshotMetadata(handler: handler, fetchedAt: Date(), durationMilliseconds: 1, trigger: "manual")
        _ = try store.commit(stagedFile: staged, handler: handler, template: template, retain: 3)
    }
} catch {
    FileHandle.standardError.write(Data("snapshot-writer: \(error)\n".utf8))
    exit(1)
}

/// A small, fast, seedable generator (SplitMix64) so each run's content differs but is reproducible.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
