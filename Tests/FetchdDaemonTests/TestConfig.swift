import FetchdConfig
import FetchdDaemon
import FetchdTestSupport
import Logging
import Testing

extension TestConfig {
    /// Writes the files, loads them (expecting no diagnostics) and opens a coordinator on them.
    static func coordinator(in directory: TemporaryDirectory, main: String = "", handlers: String) throws -> FetchCoordinator {
        let config = try ConfigLoader.load(mainFile: try write(in: directory, main: main, handlers: handlers))
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        return try Daemon(config: config, logger: Logger(label: "test")).openCoordinator()
    }
}
