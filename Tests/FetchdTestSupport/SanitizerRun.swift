import Foundation

/// What a sanitizer run of the tests (`make test-asan`, `make test-tsan`) tells the tests
/// through the environment: which sanitizer the binaries were built with (`FETCHD_SANITIZER`)
/// and how much slower they run (`FETCHD_TEST_SLOWDOWN`). Unset, as in `make test`, nothing
/// changes.
public enum SanitizerRun {
    /// `address` or `thread` in a sanitizer run; nil otherwise.
    public static var sanitizer: String? {
        let value = ProcessInfo.processInfo.environment["FETCHD_SANITIZER"] ?? ""
        return value.isEmpty ? nil : value
    }

    /// True when the binaries were built with AddressSanitizer. Its allocator keeps freed memory
    /// in a quarantine (256 MiB by default) and pads every allocation, so resident memory
    /// measures the sanitizer, not fetchd: tests skip their memory bounds then.
    public static var isAddressSanitizer: Bool { sanitizer == "address" }

    /// How many times longer the tests wait for servers, daemons and timers: `FETCHD_TEST_SLOWDOWN`
    /// (at least 1; 1 when unset). Sanitized code runs 2 to 10 times slower, and a wait sized for
    /// the plain build would fail a run that is only slow.
    public static var slowdown: Double {
        guard let text = ProcessInfo.processInfo.environment["FETCHD_TEST_SLOWDOWN"], let value = Double(text) else { return 1 }
        return max(1, value)
    }

    /// `seconds` stretched by `slowdown`, for waits that are not `waitUntil`'s.
    public static func scaled(_ seconds: Double) -> Double { seconds * slowdown }

    /// The sanitizer options of this run for a systemd unit, as `Environment=` lines (empty in a
    /// plain run). Units start with systemd's environment, not the test's, so the options must
    /// be handed over. Reports go to the unit's stderr (the journal), not to `log_path`: the
    /// units' user cannot write into the build folder. Leak checks are off inside units:
    /// LeakSanitizer stops the process's threads with ptrace, which the shipped units'
    /// `SystemCallFilter=@system-service` refuses (the leak checks run in the other suites).
    /// `LD_PRELOAD` carries Tests/Sanitizers/tsan_mutex.c's library in a ThreadSanitizer run.
    public static var unitEnvironment: String {
        guard sanitizer != nil else { return "" }
        var lines: [String] = []
        for key in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "LD_PRELOAD"] {
            guard let options = ProcessInfo.processInfo.environment[key] else { continue }
            var kept = options.split(separator: ":").filter { !$0.hasPrefix("log_path=") && !$0.hasPrefix("detect_leaks=") }
            if key == "ASAN_OPTIONS" { kept.append("detect_leaks=0") }
            if key == "LD_PRELOAD" { kept = [Substring(options)] }
            lines.append("Environment=\"\(key)=\(kept.joined(separator: ":"))\"")
        }
        return lines.joined(separator: "\n")
    }
}
