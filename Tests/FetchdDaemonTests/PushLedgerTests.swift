@testable import FetchdDaemon
import FetchdCore
import FetchdPush
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// Push admission under a rate limit (FetchdPush's ledger on the daemon's state database, a real
/// file) and an injected clock: pushes within the limit fetch now, the rest are coalesced into
/// one deferred fetch (newest data), and both the counts and the deferred push survive
/// reopening the database.
struct PushLedgerTests {
    private let origin = Date(timeIntervalSince1970: 1_800_000_000)
    private let twoPerMinute = PushLimit(count: 2, windowSeconds: 60)

    private func at(_ seconds: Double) -> Date { origin.addingTimeInterval(seconds) }

    /// The ledger the daemon keeps in `store`.
    private func ledger(_ store: StateStore) -> PushLedger { PushLedger(storage: StatePushStorage(state: store)) }

    @Test func pushesOverTheLimitAreCoalescedIntoOneDeferredFetchWithTheNewestData() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        #expect(try ledger(store).admit(of: "news", data: #"{"n":1}"#, at: at(0), limit: twoPerMinute, owner: "test").isNow)
        #expect(try ledger(store).admit(of: "news", data: #"{"n":2}"#, at: at(10), limit: twoPerMinute, owner: "test").isNow)
        // Two in the last minute: the third and fourth wait for the first to leave the window.
        guard case .deferred(let third) = try ledger(store).admit(of: "news", data: #"{"n":3}"#, at: at(20), limit: twoPerMinute, owner: "test"),
              case .deferred(let fourth) = try ledger(store).admit(of: "news", data: #"{"n":4}"#, at: at(30), limit: twoPerMinute, owner: "test") else {
            Issue.record("pushes over the limit must be deferred"); return
        }
        #expect(third.dueAt == at(60) && third.pushes == 1)
        #expect(fourth.dueAt == at(60) && fourth.pushes == 2 && fourth.data == #"{"n":4}"#)
        #expect(try ledger(store).pending().map(\.data) == [#"{"n":4}"#], "one deferred fetch, the newest data")
        // Another handler has a count of its own.
        #expect(try ledger(store).admit(of: "other", data: nil, at: at(30), limit: twoPerMinute, owner: "test").isNow)

        // Not due before its time; at its time it is counted and handed out once, with the newest data.
        #expect(try ledger(store).takeDue(of: "news", at: at(59), limit: twoPerMinute) == nil)
        guard case .run(let due) = try ledger(store).takeDue(of: "news", at: at(60), limit: twoPerMinute) else {
            Issue.record("the deferred push must run at its time"); return
        }
        #expect(due.data == #"{"n":4}"# && due.pushes == 2)
        try ledger(store).finish(due)
        #expect(try ledger(store).pending().map(\.handler) == ["other"], "only the other handler's push, until its fetch is recorded")
        #expect(try store.pushes.counted(of: "news", since: at(0)) == [at(0), at(10), at(60)])
        // The window holds the pushes at 10 s and 60 s: the next is deferred to 70 s.
        guard case .deferred(let next) = try ledger(store).admit(of: "news", data: nil, at: at(61), limit: twoPerMinute, owner: "test") else {
            Issue.record("the limit still holds after the deferred fetch"); return
        }
        #expect(next.dueAt == at(70))
    }

    @Test func aPushWithinTheLimitSupersedesTheDeferredOneAndANewerPushIsNotFinishedByAnOlderFetch() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        let one = PushLimit(count: 1, windowSeconds: 60)
        #expect(try ledger(store).admit(of: "news", data: "1", at: at(0), limit: one, owner: "test").isNow)
        guard case .deferred = try ledger(store).admit(of: "news", data: "2", at: at(1), limit: one, owner: "test"),
              case .run(let running) = try ledger(store).takeDue(of: "news", at: at(60), limit: one) else {
            Issue.record("expected a deferred push that runs at 60 s"); return
        }
        // While it runs, another push comes (over the limit again): finishing the running one
        // must not drop the newer one.
        guard case .deferred(let newer) = try ledger(store).admit(of: "news", data: "3", at: at(61), limit: one, owner: "test") else {
            Issue.record("expected the push at 61 s to be deferred"); return
        }
        try ledger(store).finish(running)
        #expect(try ledger(store).pending().map(\.data) == ["3"])
        #expect(newer.dueAt == at(120))
        // A lowered limit (a reload) moves a due push later instead of running it.
        let lowered = PushLimit(count: 1, windowSeconds: 600)
        guard case .rescheduled(let moved) = try ledger(store).takeDue(of: "news", at: at(120), limit: lowered) else {
            Issue.record("expected the due push to be moved by the lowered limit"); return
        }
        #expect(moved.dueAt == at(660))
        // Within a (raised) limit, a new push runs now and replaces the deferred one: kept, owned
        // by the daemon that fetches it, until that fetch is recorded.
        #expect(try ledger(store).admit(of: "news", data: "4", at: at(130), limit: PushLimit(count: 10, windowSeconds: 60), owner: "test").isNow)
        #expect(try ledger(store).pending().map { [$0.data, $0.owner] } == [["4", "test"]])
    }

    @Test func countsAndTheDeferredPushSurviveReopeningTheDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        do {
            let store = try StateStore(path: path)
            for second in [0.0, 1.0] {
                #expect(try ledger(store).admit(of: "news", data: nil, at: at(second), limit: twoPerMinute, owner: "test").isNow)
            }
            _ = try ledger(store).admit(of: "news", data: #"["late"]"#, at: at(2), limit: twoPerMinute, owner: "test")
        }
        let reopened = try StateStore(path: path)
        #expect(try reopened.integrityCheck())
        #expect(try ledger(reopened).pending() == [PendingPush(handler: "news", dueAt: at(60), data: #"["late"]"#,
                                                             receivedAt: at(2), pushes: 1)])
        #expect(try reopened.pushes.counted(of: "news", since: at(0)).count == 2)
        guard case .deferred = try ledger(reopened).admit(of: "news", data: nil, at: at(3), limit: twoPerMinute, owner: "test") else {
            Issue.record("the count must survive the reopening"); return
        }
    }

    /// A push admitted to fetch at once is on disk until its fetch is recorded: a daemon killed
    /// before that leaves it for the next, which runs it without counting it a second time.
    @Test func aPushAdmittedToFetchNowSurvivesUntilItsFetchIsRecorded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        do {
            let store = try StateStore(path: path)
            guard case .now(let immediate) = try ledger(store).admit(of: "news", data: #"{"n":1}"#, at: at(0), limit: twoPerMinute,
                                                                  owner: "killed") else {
                Issue.record("within the limit the push fetches now"); return
            }
            #expect(immediate == PendingPush(handler: "news", dueAt: at(0), data: #"{"n":1}"#, receivedAt: at(0), pushes: 1,
                                             owner: "killed"))
        }
        let reopened = try StateStore(path: path)
        guard case .run(let orphan) = try ledger(reopened).takeDue(of: "news", at: at(5), limit: twoPerMinute) else {
            Issue.record("the push the killed daemon admitted must run"); return
        }
        #expect(orphan.data == #"{"n":1}"# && orphan.owner == "killed")
        #expect(try reopened.pushes.counted(of: "news", since: at(0)) == [at(0)], "counted once, when it was admitted")
        try ledger(reopened).finish(orphan)
        #expect(try ledger(reopened).pending().isEmpty)
    }

    /// Two pushes admitted within one millisecond (the precision `received_at` is stored with)
    /// stay apart: finishing the first's fetch does not drop the second.
    @Test func twoPushesInOneMillisecondAreToldApart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        let ten = PushLimit(count: 10, windowSeconds: 60)
        guard case .now(let first) = try ledger(store).admit(of: "news", data: "1", at: at(0), limit: ten, owner: "test"),
              case .now = try ledger(store).admit(of: "news", data: "2", at: at(0.0002), limit: ten, owner: "test") else {
            Issue.record("both within the limit"); return
        }
        try ledger(store).finish(first)
        #expect(try ledger(store).pending().map(\.data) == ["2"])
    }

    @Test func pushLimitsParseLikeBudgets() {
        #expect(PushLimit.parse("6/hour") == PushLimit(count: 6, windowSeconds: 3600))
        #expect(PushLimit.parse("2/minute") == PushLimit(count: 2, windowSeconds: 60))
        #expect(PushLimit.parse("20/day") == PushLimit(count: 20, windowSeconds: 86_400))
        #expect(PushLimit.parse("1/10s") == PushLimit(count: 1, windowSeconds: 10))
        #expect(PushLimit.parse("3/15m")?.description == "3/15m")
        #expect(PushLimit.standard.description == "6/hour")
        for bad in ["", "6", "six/hour", "0/hour", "-1/hour", "6/fortnight", "6/0s", "6/2d", "1001/day", "6/hour/day"] {
            #expect(PushLimit.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func pushDataMustBeSmallJSON() throws {
        #expect(try PushData.validate(#"{"id": 42}"#) == #"{"id": 42}"#)
        #expect(try PushData.validate("42") == "42")
        #expect(try PushData.validate("") == nil)
        #expect(throws: PushData.Problem.self) { try PushData.validate("{id: 42}") }
        #expect(throws: PushData.Problem.self) { try PushData.validate(#"{"a": 1"#) }
        let large = "\"" + String(repeating: "x", count: Defaults.pushDataMaxBytes) + "\""
        #expect(throws: PushData.Problem.tooLarge(bytes: Defaults.pushDataMaxBytes + 2, limit: Defaults.pushDataMaxBytes)) {
            try PushData.validate(large)
        }
        #expect(throws: PushData.Problem.self) { try PushData.validate([0x22, 0xFF, 0x22]) }
    }
}

extension PushAdmission {
    /// Whether the push fetches now.
    var isNow: Bool {
        if case .now = self { return true }
        return false
    }
}
