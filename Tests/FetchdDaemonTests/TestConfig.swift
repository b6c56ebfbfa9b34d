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

extension HandlerConfig.Options {
    /// A program that does nothing: the options of a handler whose fetch a test never runs.
    static let doNothing: HandlerConfig.Options = .exec(ExecOptions(command: ["/bin/true"]))
    /// An http handler's options for a URL a test never fetches.
    static let exampleURL: HandlerConfig.Options = .http(HTTPOptions(url: "https://example.com/"))
}
