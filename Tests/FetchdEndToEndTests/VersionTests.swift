import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The version is written once, in `Defaults.version`; the binaries report it, the man pages'
/// footer is made from it (`make man`), and debian/changelog's newest entry must be for it.
@Suite struct VersionTests {
    static let repository = TestBinaries.sourceTree

    @Test func theBinariesReportTheVersion() async throws {
        for tool in ["fetchd", "fetchctl"] {
            let (status, output) = try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: tool), ["--version"])
            #expect(status == 0 && output.trimmingCharacters(in: .whitespacesAndNewlines) == Defaults.version,
                    "\(tool) --version: \(output)")
        }
    }

    /// Each rendered page's `.TH` line ends with "fetchd VERSION" (`make man-check`, which
    /// `make test` runs first, renders them into .build/man).
    @Test func theManPagesFooterNamesTheVersion() throws {
        let sources = try FileManager.default.contentsOfDirectory(atPath: Self.repository + "/docs/man").filter { $0.hasSuffix(".scd") }
        #expect(sources.count >= 3)
        for source in sources {
            let rendered = Self.repository + "/.build/man/" + source.dropLast(".scd".count)
            let page = try #require(try? String(contentsOfFile: rendered, encoding: .utf8), "\(rendered) is missing: run make man")
            let header = page.split(separator: "\n").first { $0.hasPrefix(".TH ") } ?? ""
            #expect(header.hasSuffix("\"fetchd \(Defaults.version)\""), "\(source): \(header)")
        }
    }

    /// `fetchd (VERSION-REVISION) ...`: the upstream part is the version.
    @Test func theNewestChangelogEntryIsForTheVersion() throws {
        let changelog = try String(contentsOfFile: Self.repository + "/debian/changelog", encoding: .utf8)
        let first = changelog.split(separator: "\n").first ?? ""
        let version = first.split(separator: "(").dropFirst().first?.split(separator: ")").first ?? ""
        let upstream = version.split(separator: "-").dropLast().joined(separator: "-")
        #expect(first.hasPrefix("fetchd (") && upstream == Defaults.version, "debian/changelog: \(first)")
    }
}
