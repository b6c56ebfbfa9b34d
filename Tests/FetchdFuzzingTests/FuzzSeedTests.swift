import FetchdFuzzing
import FetchdTestSupport
import Foundation
import Testing

/// Every fuzz target over its committed seeds, as `make fuzz` starts from them: a seed that
/// breaks a target's property traps this test process, as it would the fuzzer. The long runs
/// that look for new inputs are `make fuzz` and `make torture`.
@Suite struct FuzzSeedTests {
    /// The package's root folder.
    static let root = URL(fileURLWithPath: TestBinaries.sourceTree)

    /// Every regular file under `target`'s seed folders.
    static func seeds(of target: FuzzTarget) -> [URL] {
        target.seedFolders.flatMap { folder -> [URL] in
            let url = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
            return (files?.allObjects as? [URL] ?? []).filter {
                (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            }
        }.sorted { $0.path < $1.path }
    }

    /// At least five seeds per target, each run through it without a trap.
    @Test(arguments: FuzzTarget.allCases)
    func everySeedPasses(_ target: FuzzTarget) async throws {
        let seeds = Self.seeds(of: target)
        #expect(seeds.count >= 5, "\(target): only \(seeds.count) seeds in \(target.seedFolders)")
        for seed in seeds {
            let data = try Data(contentsOf: seed)
            // Off the shared pool: the push target blocks on its socket while the listener runs there.
            try await onOwnThread { target.run(data) }
        }
    }
}
