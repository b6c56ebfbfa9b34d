import CurlKit
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fetch whose task is already cancelled when it starts must end at once, however the
/// cancellation and the submission interleave with the driver thread.
struct HTTPClientCancelTests {
    /// A listening socket that never accepts: a transfer to it waits for an answer until its timeout.
    private static func silentListener() -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, length)
                _ = listen(fd, 1024)
                _ = getsockname(fd, $0, &length)
            }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func alreadyCancelledFetchesEndAtOnce() async throws {
        let (fd, port) = Self.silentListener()
        defer { close(fd) }
        let client = HTTPClient(limits: .init(maxConnections: 256, maxHostConnections: 256))
        defer { client.shutdown() }
        let directory = try TemporaryDirectory("fetchd-hdl")
        var slow = 0
        for round in 0..<10 {
            let milliseconds = await withTaskGroup(of: Double.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        withUnsafeCurrentTask { $0?.cancel() }
                        let request = HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file("\(round)-\(index)"),
                                                  userAgent: "test", timeoutMilliseconds: 60_000, maxBytes: 100)
                        let start = ContinuousClock.now
                        _ = try? await client.fetch(request)
                        return (ContinuousClock.now - start) / .milliseconds(1)
                    }
                }
                var all: [Double] = []
                for await value in group { all.append(value) }
                return all
            }
            // Generous for a loaded machine; a fetch that ignored its cancellation runs 60 s.
            slow += milliseconds.filter { $0 > 20_000 }.count
            if slow > 0 { break }  // one round shows it: not ten minutes of them
        }
        #expect(slow == 0, "\(slow) cancelled fetches took over 20 s (their timeout is 60 s)")
    }

    @Test func aStopperStopsARunningTransferAndRefusesOneNotYetSubmitted() async throws {
        let (fd, port) = Self.silentListener()
        defer { close(fd) }
        let client = HTTPClient(limits: .init(maxConnections: 8, maxHostConnections: 8))
        defer { client.shutdown() }
        let directory = try TemporaryDirectory("fetchd-hdl")
        func request(_ name: String) -> HTTPRequest {
            HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file(name), userAgent: "test",
                        timeoutMilliseconds: 60_000, maxBytes: 100)
        }
        // Stopped before it is submitted: refused at once (bounds generous for a loaded machine,
        // far below the 60 s timeout).
        let early = HTTPClient.Stopper()
        early.stop()
        var start = ContinuousClock.now
        await #expect(throws: HTTPFailure.cancelled) { try await client.fetch(request("early"), stopper: early) }
        #expect(start.duration(to: .now) < .seconds(20))
        // Stopped from another thread while libcurl waits for an answer that never comes.
        let running = HTTPClient.Stopper()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { running.stop() }
        start = ContinuousClock.now
        await #expect(throws: HTTPFailure.cancelled) { try await client.fetch(request("running"), stopper: running) }
        #expect(start.duration(to: .now) < .seconds(20), "the transfer ran to its 60 s timeout")
        #expect(running.isStopped)
    }

    /// The descriptors of this process that are open on `path`.
    private static func descriptors(on path: String) -> [String] {
        // The kernel names files by their canonical path (the temp folder's path may have "//").
        let canonical = realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == canonical }
    }

    @Test func theOutputFileIsClosedOnceTheFetchHasEndedHoweverItEnded() async throws {
        let (fd, port) = Self.silentListener()
        defer { close(fd) }
        let (closedFD, closedPort) = Self.silentListener()
        close(closedFD)  // nothing listens there any more: the connection is refused
        let client = HTTPClient(limits: .init(maxConnections: 8, maxHostConnections: 8))
        defer { client.shutdown() }
        let directory = try TemporaryDirectory("fetchd-hdl")
        func request(_ name: String, port: Int) -> HTTPRequest {
            HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file(name), userAgent: "test",
                        timeoutMilliseconds: 20_000, maxBytes: 100)
        }
        let refused = HTTPClient.Stopper()
        refused.stop()
        _ = try? await client.fetch(request("refused", port: port), stopper: refused)
        _ = try? await client.fetch(request("unreachable", port: closedPort))
        let stopped = HTTPClient.Stopper()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { stopped.stop() }
        _ = try? await client.fetch(request("stopped", port: port), stopper: stopped)
        for name in ["refused", "unreachable", "stopped"] {
            #expect(FileManager.default.fileExists(atPath: directory.file(name)), "\(name): no output file was made")
            #expect(Self.descriptors(on: directory.file(name)).isEmpty, "\(name): its output file is still open")
        }
    }

    /// The descriptors of this process's TCP sockets whose peer is 127.0.0.1:`port`.
    private static func sockets(toPort port: Int) -> [Int32] {
        // /proc/net/tcp: "sl local_address rem_address st ... uid timeout inode", ports in hex.
        let table = ProcFile.read("/proc/net/tcp") ?? ""
        let inodes = Set(table.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count > 9, let peer = fields[2].split(separator: ":").last, Int(peer, radix: 16) == port else { return nil }
            return "socket:[\(fields[9])]"
        })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { name in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  inodes.contains(target) else { return nil }
            return Int32(name)
        }
    }

    @Test func libcurlsConnectionsAreClosedOnExec() async throws {
        // libcurl opens its sockets without SOCK_CLOEXEC: a program started meanwhile by anything
        // in the process inherited the connection and held it open after libcurl closed it.
        let (fd, port) = Self.silentListener()
        defer { close(fd) }
        let client = HTTPClient(limits: .init(maxConnections: 8, maxHostConnections: 8))
        defer { client.shutdown() }
        let directory = try TemporaryDirectory("fetchd-hdl")
        let request = HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file("out"), userAgent: "test",
                                  timeoutMilliseconds: 20_000, maxBytes: 100)
        let stopper = HTTPClient.Stopper()
        async let fetched = try? client.fetch(request, stopper: stopper)
        // The kernel completes the handshake on the listener's backlog: libcurl then waits for an answer.
        var found: [Int32] = []
        for _ in 0..<500 where found.isEmpty {
            found = Self.sockets(toPort: port)
            if found.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        // Read while the transfer is still waiting, so the descriptor is still libcurl's.
        let closeOnExec = found.map { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 }
        stopper.stop()
        _ = await fetched
        #expect(!found.isEmpty, "libcurl's connection to port \(port) was not found")
        #expect(closeOnExec.allSatisfy { $0 }, "libcurl's socket is inherited by programs started meanwhile")
    }

    /// A transfer started without a task (`start`, a wake's batch) ends at its own `deadline`,
    /// whatever libcurl's own time limit says, and replies exactly once; one that cannot start
    /// replies at once.
    @Test func aStartedTransferEndsAtItsDeadlineAndRepliesOnce() async throws {
        let (fd, port) = Self.silentListener()
        defer { close(fd) }
        let client = HTTPClient(limits: .init(maxConnections: 8, maxHostConnections: 8))
        defer { client.shutdown() }
        let directory = try TemporaryDirectory("fetchd-start")
        defer { directory.remove() }
        let replies = Mutex<[(String, Result<HTTPResponse, HTTPFailure>, Duration)]>([])
        let start = ContinuousClock.now
        for (name, milliseconds) in [("short", 300), ("long", 700)] {
            var request = HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file(name),
                                      userAgent: "test", timeoutMilliseconds: 10_000, maxBytes: 100)
            request.deadline = start + .milliseconds(milliseconds)
            client.start(request) { result in replies.withLock { $0.append((name, result, ContinuousClock.now - start)) } }
        }
        var refused = HTTPRequest(url: "http://127.0.0.1:\(port)/", outputPath: directory.file("missing/folder"),
                                  userAgent: "test", timeoutMilliseconds: 10_000, maxBytes: 100)
        refused.deadline = start + .seconds(5)
        client.start(refused) { result in replies.withLock { $0.append(("refused", result, ContinuousClock.now - start)) } }
        #expect(replies.withLock { $0.map(\.0) } == ["refused"])  // at once, on this thread
        while replies.withLock({ $0.count }) < 3 && ContinuousClock.now - start < .seconds(5) {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))  // a second reply would come by now
        let seen = replies.withLock { $0 }
        #expect(seen.map(\.0) == ["refused", "short", "long"], "\(seen.map(\.0))")
        for (name, result, after) in seen where name != "refused" {
            guard case .failure(.timeout) = result else { Issue.record("\(name): \(result)"); continue }
            let deadline = name == "short" ? 300 : 700
            #expect(after >= .milliseconds(deadline) && after < .milliseconds(deadline + 150), "\(name) ended after \(after)")
        }
        if case .failure(.write) = seen[0].1 {} else { Issue.record("refused: \(seen[0].1)") }
    }
}
