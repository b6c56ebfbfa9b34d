@testable import FetchdDaemon
import Foundation
import Testing

/// Rules that measure time on the wall clock, checked with a clock stepped back (issue 7's clock
/// jumps; the end-to-end run under libfaketime is FaultTortureTests).
struct ClockStepTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A use dated before the last recorded one (the clock went back three hours) is a new session,
    /// not folded into the last one for the three hours it takes the clock to catch up.
    @Test func aUseAfterTheClockSteppedBackStartsASession() {
        let folder = UseFolder()
        #expect(folder.startsSession("news", at: now))
        #expect(!folder.startsSession("news", at: now.addingTimeInterval(10)), "within the session: folded")
        #expect(folder.startsSession("news", at: now.addingTimeInterval(-3 * 3600)))
        #expect(!folder.startsSession("news", at: now.addingTimeInterval(-3 * 3600 + 10)), "and folds from there on")
    }
}
