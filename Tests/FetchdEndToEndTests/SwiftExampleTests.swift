import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `examples/swift`, built as an application's package builds against the `FetchdClient`
/// product (a package of its own that depends on this one by path), then run against the real
/// fetchd on a private session bus: register, fetch, read, list, unregister, a named error.
///
/// The build resolves this package's dependencies (offline: SwiftPM's cache, or the machine's
/// mirror) and compiles only what the product needs: FetchdClient, FetchdSystemd, CSystemdShim
/// and swift-log. From a new clone that takes about 30 s on 2 cores (10 s of it resolving);
/// its folder is `.build/swift-example` in the source tree (ignored by git), kept between runs,
/// so that a second run takes about 6 s. `make test` runs this suite with the CPU-bound ones,
/// apart from the suites that time things.
@Suite(.serialized)
struct SwiftExampleTests {
    /// The example's manifest names this package as an application's would, by path.
    static let dependency = ".package(name: \"fetchd\", path: \"../..\")"

    /// Copies the example to `package`, its dependency on `../..` pointed at this source tree.
    /// This package's `Package.resolved`, when there is one, goes with it: the same versions,
    /// and resolving takes 10 s instead of 25 (no version is computed again).
    static func copyExample(manifest: String, to package: String) throws {
        let tree = TestBinaries.sourceTree
        try? FileManager.default.removeItem(atPath: package)
        try FileManager.default.createDirectory(atPath: package, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: tree + "/examples/swift/Sources", toPath: package + "/Sources")
        try? FileManager.default.copyItem(atPath: tree + "/Package.resolved", toPath: package + "/Package.resolved")
        try manifest.replacingOccurrences(of: "\"../..\"", with: "\"\(tree)\"")
            .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
    }

    @Test func theSwiftExampleBuildsAndTalksToFetchd() async throws {
        let folder = TestBinaries.sourceTree + "/.build/swift-example"
        let manifest = try String(contentsOfFile: TestBinaries.sourceTree + "/examples/swift/Package.swift", encoding: .utf8)
        try #require(manifest.contains(Self.dependency), "examples/swift/Package.swift does not say \(Self.dependency)")
        try Self.copyExample(manifest: manifest, to: folder + "/package")
        let started = ContinuousClock.now
        let build = try await ChildProcess.runWithoutBlocking("/usr/bin/env", [
            "swift", "build", "--package-path", folder + "/package", "--scratch-path", folder + "/build",
        ])
        let seconds = (ContinuousClock.now - started).components.seconds
        print("SwiftExampleTests: examples/swift built in \(seconds) s")
        try #require(build.status == 0, "\(build.output)")
        // The Swift modules compiled: the library and what it needs, none of the daemon's.
        let modules = try FileManager.default.contentsOfDirectory(atPath: folder + "/build/debug/Modules")
            .filter { $0.hasSuffix(".swiftmodule") }.map { String($0.dropLast(".swiftmodule".count)) }
        #expect(Set(modules) == ["FetchdClient", "FetchdSystemd", "Logging", "fetchd_swift_client"], "\(modules.sorted())")
        let client = folder + "/build/debug/fetchd-swift-client"

        let www = try TemporaryDirectory("fetchd-swift-www")
        try "hello swift\n".write(toFile: www.file("news.txt"), atomically: true, encoding: .utf8)
        let server = try TestHTTPServer.files(in: www.path)
        let setup = try await BusDaemon()
        func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await ChildProcess.runWithoutBlocking("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(setup.bus.address)", client] + arguments)
        }

        let registered = try await run(["register", "news", server.url("/news.txt"), "retain=2", "usage=[explicit]"])
        #expect(registered.status == 0 && registered.output == "news@\(getuid())\n", "\(registered.output)")
        // The registration's own first fetch published the content: asked again, no new data.
        #expect(await eventually(timeoutSeconds: 10, pollMilliseconds: 200) {
            (try? await run(["status", "news"]))?.output.contains("last_result=newData") == true
        }, "the registered handler was not fetched")
        let fetched = try await run(["fetch", "news", "20"])
        #expect(fetched.status == 0 && fetched.output == "noData \n", "\(fetched.output)")
        let read = try await run(["read", "news"])
        #expect(read.output.contains("content_type=text/plain\n") && read.output.contains("version=00000001-"), "\(read.output)")
        #expect(read.output.hasSuffix("\n\nhello swift\n"), "\(read.output)")
        #expect(try await run(["list"]).output == "news\n")
        #expect(try await run(["unregister", "news"]).status == 0)
        let missing = try await run(["read", "news"])
        #expect(missing.status == 1 && missing.output.hasPrefix("ERROR org.fetchd.Fetchd1.Error.NotFound: "), "\(missing.output)")

        await setup.stop()
    }
}
