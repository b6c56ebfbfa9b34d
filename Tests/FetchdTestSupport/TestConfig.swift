/// The one way the tests lay out a configuration: `etc/fetchd.toml` with every directory inside
/// the temp folder, and the handlers as `etc/handlers.d/test.toml`.
public enum TestConfig {
    /// Writes the files and returns the main file's path. `main` is appended to the main file.
    @discardableResult
    public static func write(in directory: TemporaryDirectory, main: String = "", handlers: String) throws -> String {
        try directory.write("""
            cache_dir = "\(directory.file("cache"))"
            state_dir = "\(directory.file("state"))"
            runtime_dir = "\(directory.file("run"))"
            \(main)
            """, to: "etc/fetchd.toml")
        try directory.write(handlers, to: "etc/handlers.d/test.toml")
        return directory.file("etc/fetchd.toml")
    }
}
