import FetchdTestSupport
import Foundation

/// What runs in a namespace: fetchd's own process and what its programs leave.
extension SystemdTests.FetchdUnitTests {
    /// The user `fetchd.service`'s main process runs as.
    static func mainUser(_ namespace: SystemdNamespace) async throws -> String {
        let pid = try await namespace.property("MainPID", of: "fetchd.service")
        return try await namespace.run(["ps", "-o", "user=", "-p", pid]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits up to 5 s for process `pid` (the namespace's numbering) to be gone; what `ps` still
    /// shows of it when it is not ("" when it is).
    static func leftOf(_ namespace: SystemdNamespace, pid: String) async throws -> String {
        var alive = "not a pid: \(pid)"
        guard Int(pid) != nil else { return alive }
        _ = try await eventually(timeoutSeconds: 5) {
            alive = try await namespace.run(["ps", "-o", "pid=,stat=,cmd=", "-p", pid]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return alive.isEmpty
        }
        return alive
    }

    /// A program whose child leaves its session (`setsid`) and sleeps; the child's pid is the snapshot.
    static let escape = """
        [[handler]]
        name = "escape"
        kind = "exec"
        command = ["/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > \\"$FETCHD_OUTPUT\\""]
        min_interval = "1h"
        """
}
