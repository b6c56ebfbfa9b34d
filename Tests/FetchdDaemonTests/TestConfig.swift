import FetchdConfig
import FetchdDaemon
import FetchdTestSupport
import Logging
import Testing

/// The one way these tests lay out a configuration: `etc/fetchd.toml` with every directory inside
/// the temp folder, and the handlers as `etc/handlers.d/test.toml`.
enum TestConfig {
    /// Writes the files and returns the main file's path. `main` is appended to the main file.
    @discardableResult
    static func write(in directory: TemporaryDirectory, main: String = "", handlers: String) throws -> String {
        try directory.write("""
            cache_dir = "\(directory.file("cache"))"
            state_dir = "\(directory.file("state"))"
            runtime_dir = "\(directory.file("run"))"
            \(main)
            """, to: "etc/fetchd.toml")
        try directory.write(handlers, to: "etc/handlers.d/test.toml")
        return directory.file("etc/fetchd.toml")
    }

    /// Writes the files, loads them (expecting no diagnostics) and opens a coordinator on them.
    static func coordinator(in directory: TemporaryDirectory, main: String = "", handlers: String) throws -> FetchCoordinator {
        let config = try ConfigLoader.load(mainFile: try write(in: directory, main: main, handlers: handlers))
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        return try Daemon(config: config, logger: Logger(label: "test")).openCoordinator()
    }
}
