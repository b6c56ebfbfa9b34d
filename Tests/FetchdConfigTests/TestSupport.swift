import Foundation
import Testing

/// Paths of files that ship with the package, found from this source file's location.
enum PackagePaths {
    /// This test target's folder, `Tests/FetchdConfigTests`.
    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// The corpus of broken configuration files.
    static let brokenFixtures = testsFolder.appendingPathComponent("Fixtures/broken", isDirectory: true)

    /// The packaged main configuration file, `config/fetchd.toml`.
    static let shippedConfig = testsFolder.appendingPathComponent("../../config/fetchd.toml").standardizedFileURL

    /// The scdoc source of the configuration reference, fetchd.toml(5).
    static let configManPage = testsFolder.appendingPathComponent("../../docs/man/fetchd.toml.5.scd").standardizedFileURL
}
