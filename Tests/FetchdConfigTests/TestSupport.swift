import Foundation
import Testing

/// A fresh, uniquely named folder under the system temporary directory, removed by `remove()`.
///
/// Tests write configuration files here so they never depend on, or disturb, real files.
struct TemporaryFolder {
    /// The folder's absolute path, without a trailing slash.
    let path: String

    /// Creates the folder.
    init() throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("fetchd-config-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    /// Writes `text` to `relativePath` inside the folder, creating intermediate folders,
    /// and returns the file's absolute path.
    @discardableResult
    func write(_ text: String, to relativePath: String) throws -> String {
        let file = path + "/" + relativePath
        let parent = (file as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// The absolute path of `relativePath` inside the folder (which need not exist).
    func path(_ relativePath: String) -> String { path + "/" + relativePath }

    /// Deletes the folder and everything in it.
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Paths of files that ship with the package, found from this source file's location.
enum PackagePaths {
    /// This test target's folder, `Tests/FetchdConfigTests`.
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// The corpus of broken configuration files.
    static let brokenFixtures = testsFolder.appendingPathComponent("Fixtures/broken", isDirectory: true)

    /// The packaged main configuration file, `config/fetchd.toml`.
    static let shippedConfig = testsFolder.appendingPathComponent("../../config/fetchd.toml").standardizedFileURL
}
