import FetchdTestSupport
import Foundation
import Testing

/// fetchd-runas, the privileged part, asked directly through its socket in a real systemd: as
/// fetchd's user it starts what the root-owned configuration names and nothing else (what a
/// fetchd taken over could get out of it); other users cannot ask at all.
extension SystemdTests { @Suite(.serialized) struct FetchdRunasTests {
    /// Sends argv[1] (a request's JSON) to fetchd-runas and prints the reply, then what the
    /// passed output holds; a refused connection prints `connect: ERROR`.
    static let client = """
        import array, os, socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect("/run/fetchd-runas.sock")
        except OSError as error:
            print("connect:", error.strerror); sys.exit(0)
        s.send(sys.argv[1].encode())
        message, extra, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
        print(message.decode())
        for _, _, data in extra:
            print("output:", os.read(array.array("i", data)[0], 100).decode().strip())
        """

    static let handlers = """
        [[handler]]
        name = "as-nobody"
        kind = "exec"
        user = "nobody"
        command = ["/bin/sh", "-c", "id -un > \\"$FETCHD_OUTPUT\\""]
        min_interval = "never"

        [[handler]]
        name = "web"
        kind = "http"
        url = "http://127.0.0.1:9/"
        min_interval = "never"
        """

    /// A request for `handler` with `extra` fields (`"key": value, ...`) added.
    static func request(_ handler: String, program: String = "command", extra: String = "") -> String {
        "{\"version\": 1, \"handler\": \"\(handler)\", \"program\": \"\(program)\", \"trigger\": \"manual\", "
            + "\"seconds\": 10, \"wallDeadline\": 0\(extra.isEmpty ? "" : ", " + extra)}"
    }

    /// What fetchd-runas answers `request` sent as `user`.
    static func ask(_ namespace: SystemdNamespace, _ request: String, as user: String = "fetchd") async throws -> String {
        let output = try await namespace.run(["setpriv", "--reuid=\(user)", "--regid=\(user == "nobody" ? "nogroup" : user)",
                                              "--init-groups", "/usr/bin/python3", "-c", client, request])
        return output.stdout + output.stderr
    }

    @Test func itStartsOnlyWhatRootsConfigurationNamesAsTheUserItNames() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await SystemdTests.FetchdUnitTests.install(namespace, handlers: Self.handlers)
        try await namespace.check(["systemctl", "start", "fetchd-runas.socket"])

        // What fetchd may ask: a configured handler, run as its user, its output passed back.
        let granted = try await Self.ask(namespace, Self.request("as-nobody"))
        #expect(granted.contains("\"result\":\"newData\"") && granted.contains("output: nobody"), "\(granted)")

        // Another program, another user, or anything else beside the handler's name: refused.
        let refusals: [(request: String, words: String)] = [
            (Self.request("as-nobody", extra: "\"user\": \"root\""), "unknown field(s) user"),
            (Self.request("as-nobody", extra: "\"command\": [\"/bin/sh\", \"-c\", \"id > /tmp/x\"]"), "unknown field(s) command"),
            (Self.request("nope"), "no handler \\\"nope\\\""),
            (Self.request("web"), "not an exec handler"),
            (Self.request("as-nobody", program: "on_complete", extra: "\"snapshot\": \"/etc/shadow\""), "has no on_complete"),
            (Self.request("as-nobody", extra: "\"version\": 2").replacingOccurrences(of: "\"version\": 1, ", with: ""),
             "protocol version 2"),
            ("not json", "not a JSON object"),
        ]
        for (request, words) in refusals {
            let answer = try await Self.ask(namespace, request)
            #expect(answer.contains("\"result\":\"refused\"") && answer.contains(words), "\(request): \(answer)")
            #expect(!answer.contains("output:"), "\(request): \(answer)")
        }

        // Other users may not even connect (the socket is root:fetchd 0660).
        let stranger = try await Self.ask(namespace, Self.request("as-nobody"), as: "nobody")
        #expect(stranger.hasPrefix("connect: Permission denied"), "\(stranger)")
        // Every run was a unit of its own, and all are gone.
        let left = try await namespace.run(["systemctl", "list-units", "--no-legend", "--plain", "fetchd-runas@*"]).stdout
        #expect(left.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(left)")
    }

    /// A handler whose root-owned file was made writable by fetchd's user is no longer
    /// root's word: fetchd-runas refuses to run it.
    @Test func itRefusesAConfigurationFetchdCouldHaveWritten() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await SystemdTests.FetchdUnitTests.install(namespace, handlers: Self.handlers)
        try await namespace.check(["chown", "fetchd", "/etc/fetchd/handlers.d/test.toml"])
        try await namespace.check(["systemctl", "start", "fetchd-runas.socket"])
        let answer = try await Self.ask(namespace, Self.request("as-nobody"))
        #expect(answer.contains("\"result\":\"refused\"") && answer.contains("owned by uid"), "\(answer)")
    }
} }
