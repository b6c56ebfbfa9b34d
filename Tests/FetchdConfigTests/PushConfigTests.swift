import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The push keys: `push_limit` and `push_token_file` on handlers, `push_listen` in the main file.
struct PushConfigTests {
    /// A token as `openssl rand -hex 16` makes one: 128 bits, accepted.
    static let goodToken = "279343f2ac8aea7d21000d347980970a"

    private func handler(in folder: TemporaryDirectory, _ extra: String) throws -> (HandlerConfig?, [ConfigDiagnostic]) {
        let main = try folder.write("", to: "fetchd.toml")
        try folder.write("""
            [[handler]]
            name = "feed"
            kind = "exec"
            command = ["/bin/true"]
            \(extra)
            """, to: "handlers.d/feed.toml")
        let loaded = try ConfigLoader.load(mainFile: main)
        return (loaded.handler(named: "feed"), loaded.diagnostics)
    }

    private func tokenFile(in folder: TemporaryDirectory, _ text: String, mode: mode_t) throws -> String {
        let path = try folder.write(text, to: "feed.token")
        #expect(chmod(path, mode) == 0)
        return path
    }

    @Test func defaultsAndAValidTokenFile() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let (plain, _) = try handler(in: folder, "")
        #expect(plain?.pushLimit == .standard && plain?.pushToken == nil)
        let token = Self.goodToken
        let path = try tokenFile(in: folder, token + "\n", mode: 0o600)
        let (configured, problems) = try handler(in: folder, "push_limit = \"2/minute\"\npush_token_file = \"\(path)\"")
        #expect(problems.isEmpty, "\(problems)")
        #expect(configured?.pushLimit == PushLimit(count: 2, windowSeconds: 60))
        #expect(configured?.pushToken == token, "the final newline is not part of the token")
    }

    @Test func aTokenFileOthersCanReadOrAShortTokenIsRefusedWithItsLine() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        for (mode, text, expected) in [
            (mode_t(0o640), Self.goodToken, "has mode 0640: group or others may read or write it"),
            (mode_t(0o604), Self.goodToken, "has mode 0604"),
            (mode_t(0o600), "short", "is too easy to guess"),
            (mode_t(0o600), String(repeating: "c", count: 20) + " " + String(repeating: "d", count: 20), "visible ASCII"),
        ] {
            let path = try tokenFile(in: folder, text, mode: mode)
            let (loaded, problems) = try handler(in: folder, "push_token_file = \"\(path)\"")
            #expect(loaded == nil, "an invalid handler is not loaded")
            let problem = try #require(problems.first)
            #expect(problem.key == "push_token_file" && problem.line == 5, "\(problem)")
            #expect(problem.message.contains(expected), "\(problem.message)")
        }
    }

    @Test func aTokenFileBehindASymlinkOrOwnedBySomeoneElseIsRefused() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let real = try tokenFile(in: folder, Self.goodToken, mode: 0o600)
        let link = folder.file("link.token")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        var (loaded, problems) = try handler(in: folder, "push_token_file = \"\(link)\"")
        #expect(loaded == nil && problems.first?.message.contains("a symbolic link") == true, "\(problems)")
        // Only root can give a file to another user here.
        if geteuid() == 0 {
            chown(real, 65534, 65534)
            (loaded, problems) = try handler(in: folder, "push_token_file = \"\(real)\"")
            #expect(loaded == nil && problems.first?.message.contains("owned by uid 65534") == true, "\(problems)")
        }
    }

    /// `fetchctl simulate --config` loads schedules only: a token file it may not read (it runs as
    /// a user, the file is the daemon's) must not make the handler invalid there.
    @Test func aLoadWithoutSecretsNamesTheTokenFileButDoesNotReadIt() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let path = try tokenFile(in: folder, Self.goodToken, mode: 0o640)
        let main = try folder.write("", to: "fetchd.toml")
        try folder.write("""
            [[handler]]
            name = "feed"
            kind = "exec"
            command = ["/bin/true"]
            push_token_file = "\(path)"
            """, to: "handlers.d/feed.toml")
        #expect(try ConfigLoader.load(mainFile: main).handler(named: "feed") == nil, "the daemon refuses it")
        let schedules = try ConfigLoader.load(mainFile: main, readsSecrets: false)
        #expect(schedules.diagnostics.isEmpty, "\(schedules.diagnostics)")
        #expect(schedules.handler(named: "feed")?.pushToken == nil)
    }

    /// A token needs 128 bits of entropy (`PushTokenStrength`): 16 hexadecimal digits (64 bits),
    /// which the old 16-character minimum let through, are refused with the file, line and key
    /// and how to make a good one; tokens as `openssl rand -hex 16` and `base64` make them pass.
    @Test func aTokenUnder128BitsIsRefusedAndSaysHowToMakeOne() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        for weak in ["0123456789abcdef", "7f3a9c2e5b8d1046e2f7a9c3b5d8e1", "correct-horse-battery",
                     "feed-token-" + String(repeating: "f", count: 24), String(repeating: "5e", count: 20)] {
            let path = try tokenFile(in: folder, weak + "\n", mode: 0o600)
            let (loaded, problems) = try handler(in: folder, "push_token_file = \"\(path)\"")
            #expect(loaded == nil, "\(weak) was accepted")
            let problem = try #require(problems.first, "\(weak) was accepted")
            #expect(problem.key == "push_token_file" && problem.line == 5 && problem.file.hasSuffix("handlers.d/feed.toml"),
                    "\(problem)")
            #expect(problem.message.contains("the token in \"\(path)\" is too easy to guess")
                        && problem.message.contains("128 bits") && problem.message.contains("openssl rand -hex 16"),
                    "\(problem.message)")
        }
        for good in [Self.goodToken, "S0L7LbO9iHnXg9+AfkZATg==", "f753bcac-1bfe-8784-4563-4dc63efa5fc4"] {
            let path = try tokenFile(in: folder, good + "\n", mode: 0o600)
            let (loaded, problems) = try handler(in: folder, "push_token_file = \"\(path)\"")
            #expect(problems.isEmpty && loaded?.pushToken == good, "\(good): \(problems)")
        }
    }

    @Test func pushTrustedProxyIsAnIPAddressOrNothing() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        #expect(DaemonConfig().pushTrustedProxy == "", "none by default")
        for address in ["127.0.0.1", "::1", "192.0.2.7"] {
            let main = try folder.write("push_trusted_proxy = \"\(address)\"\n", to: "fetchd.toml")
            #expect(try ConfigLoader.load(mainFile: main).daemon.pushTrustedProxy == address)
        }
        for bad in ["localhost", "127.0.0.1:8443", "[::1]", "10.0.0.0/8"] {
            let main = try folder.write("push_trusted_proxy = \"\(bad)\"\n", to: "fetchd.toml")
            let problems = ConfigLoader.examine(path: main).diagnostics
            #expect(problems.map(\.key) == ["push_trusted_proxy"] && problems.first?.message.contains("is not an IP address") == true,
                    "\(bad): \(problems)")
        }
    }

    @Test func listenAddressesAreIPLiteralsWithAPort() {
        #expect(ListenAddress.parse("127.0.0.1:8617") == ListenAddress(host: "127.0.0.1", port: 8617))
        #expect(ListenAddress.parse("[::1]:8617") == ListenAddress(host: "::1", port: 8617))
        #expect(ListenAddress.parse("0.0.0.0:0")?.isLoopback == false)
        #expect(ListenAddress.parse("127.0.0.2:1")?.isLoopback == true)
        #expect(ListenAddress(host: "::1", port: 80).description == "[::1]:80")
        for bad in ["", "127.0.0.1", "localhost:8617", "127.0.0.1:", "127.0.0.1:65536", "::1:8617", "[::1]8617",
                    "127.0.0.1:-1", "127.0.0.1:8617 ", "256.0.0.1:80"] {
            #expect(ListenAddress.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func pushListenIsReadFromTheMainFile() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = try folder.write("push_listen = \"127.0.0.1:8617\"\n", to: "fetchd.toml")
        #expect(try ConfigLoader.load(mainFile: main).daemon.pushListen == ListenAddress(host: "127.0.0.1", port: 8617))
        let off = try folder.write("push_listen = \"\"\n", to: "fetchd.toml")
        #expect(try ConfigLoader.load(mainFile: off).daemon.pushListen == nil)
    }
}
