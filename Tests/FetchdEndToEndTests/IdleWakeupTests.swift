import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// fetchd between wakes costs no CPU: no thread of the real binary wakes while nothing is due.
/// (Not a timing test: it counts context switches, which an idle thread does not make however
/// slow the machine is. `make bench-idle` measures the same over ten minutes.)
@Suite(.serialized)
struct IdleWakeupTests {
    @Test func noThreadWakesWhileNothingIsDue() async throws {
        let file = try TemporaryDirectory("fetchd-idle")
        defer { file.remove() }
        let source = try file.write("content", to: "source.txt")
        let handlers = (1...10).map { index in
            """
            [[handler]]
            name = "file-\(index)"
            kind = "http"
            url = "file://\(source)"
            allow_file_urls = true
            min_interval = "6h"
            deadline = "2s"
            """
        } + ["""
            [[handler]]
            name = "program"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo fetched > \\"$FETCHD_OUTPUT\\""]
            min_interval = "6h"
            deadline = "2s"
            """]
        // With the push listener on: an HTTP server that waits for requests must wait quietly too.
        let daemon = try DaemonProcess(handlers: handlers.joined(separator: "\n\n"), heartbeat: "1h",
                                       extraMain: "push_listen = \"127.0.0.1:0\"")
        try await daemon.start()
        defer { daemon.stopAndReadLog() }
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        let names = (1...10).map { "file-\($0)" } + ["program"]
        #expect(await waitUntil(timeoutSeconds: 30) {
            names.allSatisfy { (try? state.history(of: $0, limit: 1).count) ?? 0 == 1 }
        }, "the first wake should fetch every handler")
        // The wake's tail (results committed, plans made) first: counted from the first second
        // in which no thread switched at all.
        let pid = daemon.process.processIdentifier
        var quiet = false
        for _ in 0..<Int(SanitizerRun.scaled(30)) where !quiet {
            let earlier = Self.switches(of: pid)
            try await Task.sleep(for: .seconds(1))
            quiet = Self.switches(of: pid).allSatisfy { tid, entry in earlier[tid]?.count == entry.count }
        }
        #expect(quiet, "fetchd never went quiet for a second after its first wake")
        let before = Self.switches(of: pid)
        try await Task.sleep(for: .seconds(5))
        let after = Self.switches(of: pid)
        let woken = after.compactMap { tid, entry -> String? in
            let delta = entry.count - (before[tid]?.count ?? 0)
            return delta > 0 ? "\(entry.name) (\(tid)): \(delta)" : nil
        }
        #expect(woken.isEmpty, "threads that woke in 5 s with nothing due: \(woken.sorted())")
    }

    /// Voluntary + involuntary context switches of every thread of `pid`, by thread id.
    static func switches(of pid: Int32) -> [String: (name: String, count: Int)] {
        ProcFile.contextSwitches(of: "/proc/\(pid)")
    }
}
