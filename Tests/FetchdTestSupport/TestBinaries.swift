import Foundation

/// Finds the executables this package builds, for tests that run the real binaries.
public enum TestBinaries {
    /// The folder holding the built products: `$FETCHD_BIN_DIR` (set by `make test`), else the
    /// folder of the running test bundle, else `.build/debug` beside the package.
    public static var directory: String {
        if let configured = ProcessInfo.processInfo.environment["FETCHD_BIN_DIR"], !configured.isEmpty {
            return configured
        }
        let bundleDirectory = Bundle.main.bundleURL.deletingLastPathComponent().path
        if FileManager.default.isExecutableFile(atPath: bundleDirectory + "/fetchd") { return bundleDirectory }
        let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        if FileManager.default.isExecutableFile(atPath: executableDirectory + "/fetchd") { return executableDirectory }
        return sourceTree + "/.build/debug"
    }

    /// The package's source tree (where Package.swift is).
    public static let sourceTree = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The path of the built executable `name`.
    public static func path(of name: String) -> String { directory + "/" + name }
}

/// A folder under the system temp directory, removed by `remove()` or when the last reference
/// to it goes. A test that hands only the path on keeps the folder itself alive (`defer {
/// folder.remove() }`): after its last use Swift may release it early.
public final class TemporaryDirectory: Sendable {
    /// The folder's path.
    public let path: String

    /// Creates a fresh, empty folder whose name starts with `prefix`.
    public init(_ prefix: String = "fetchd-test") throws {
        let template = NSTemporaryDirectory() + "/\(prefix)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: bytes)
    }

    /// A path inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` inside the folder, creating intermediate folders.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> String {
        let target = file(name)
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        return target
    }

    /// Deletes the folder and everything in it.
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}

/// Polls `condition` every 50 ms until it holds or `timeoutSeconds` pass (stretched by
/// `SanitizerRun.slowdown` in a sanitizer run); returns whether it held.
public func waitUntil(timeoutSeconds: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
    try await eventually(timeoutSeconds: timeoutSeconds, pollMilliseconds: 50) { try condition() }
}

/// `waitUntil` for a condition that awaits (a command run, a request): polls every
/// `pollMilliseconds` until it holds or `timeoutSeconds` pass (stretched by
/// `SanitizerRun.slowdown` in a sanitizer run); returns whether it held.
public func eventually(timeoutSeconds: Double, pollMilliseconds: Int = 20,
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(SanitizerRun.scaled(timeoutSeconds))
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(pollMilliseconds))
    }
    return try await condition()
}
