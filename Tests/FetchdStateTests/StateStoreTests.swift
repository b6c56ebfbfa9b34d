import FetchdCore
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// The state database: results recorded durably, state derived correctly, history bounded.
struct StateStoreTests {
    private func record(_ handler: String, _ result: FetchResult, at seconds: Double,
                        validators: HTTPValidators? = nil, notBefore: Date? = nil) -> CompletedFetch {
        let start = Date(timeIntervalSince1970: 1_800_000_000 + seconds)
        var fetch = CompletedFetch(handler: handler, trigger: .timer, startedAt: start, finishedAt: start.addingTimeInterval(0.25),
                                   result: result, bytes: 10, sha256: "ab", version: "v")
        (fetch.validators, fetch.notBefore) = (validators, notBefore)
        return fetch
    }

    @Test func recordingUpdatesStateAndHistory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        try store.record(record("news", .newData, at: 0))
        try store.record(record("news", .failed(reason: "HTTP 500"), at: 60))
        try store.record(record("news", .expired, at: 120))
        let state = try #require(try store.state(of: "news"))
        #expect(state.lastResult == "expired")
        #expect(state.consecutiveFailures == 2)
        #expect(state.newDataUnseen == 1)
        #expect(state.lastSuccessAt == Date(timeIntervalSince1970: 1_800_000_000.25))
        let history = try store.history(of: "news", limit: 10)
        #expect(history.map(\.result) == [.expired, .failed(reason: "HTTP 500"), .newData])
        #expect(history.map(\.trigger) == [.timer, .timer, .timer])
        #expect(history[0].durationMilliseconds == 250)
        try store.record(record("news", .noData, at: 180))
        #expect(try store.state(of: "news")?.consecutiveFailures == 0)
        try store.markSeen()
        #expect(try store.state(of: "news")?.newDataUnseen == 0)
    }

    @Test func freshFetchesAreTheSuccessesSinceADate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        try store.record(record("news", .newData, at: 0))
        try store.record(record("news", .noData, at: 60))
        try store.record(record("news", .failed(reason: "HTTP 500"), at: 120))
        try store.record(record("news", .expired, at: 180))
        try store.record(record("other", .newData, at: 200))
        try store.record(record("news", .newData, at: 240))
        // Recorded late (a long fetch finishing after a later one): ordered by its start, and a
        // start exactly at `since` counts.
        try store.record(record("news", .noData, at: 30))
        let since = Date(timeIntervalSince1970: 1_800_000_030)
        #expect(try store.freshFetches(of: "news", since: since).map(\.timeIntervalSince1970)
                == [1_800_000_030, 1_800_000_060, 1_800_000_240])
        #expect(try store.freshFetches(of: "news", since: .distantPast).count == 4)
    }

    @Test func aBatchIsRecordedInOrderWithTheSameRules() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        let floor = Date(timeIntervalSince1970: 1_800_000_900.125)
        let stored = try store.record([
            record("a", .newData, at: 0.123, validators: HTTPValidators(etag: "\"e1\"", lastModified: nil)),
            record("b", .failed(reason: "HTTP 503"), at: 0, notBefore: floor),
            // No validators: the stored ones stay.
            record("a", .noData, at: 60),
        ])
        #expect(stored.map(\.handler) == ["a", "b", "a"])
        #expect(stored.compactMap(\.id).count == 3)
        let a = try #require(try store.state(of: "a"))
        #expect(a.etag == "\"e1\"" && a.lastResult == "noData" && a.newDataUnseen == 1)
        #expect(a.lastSuccessAt == Date(timeIntervalSince1970: 1_800_000_060.25))
        let b = try #require(try store.state(of: "b"))
        #expect(b.consecutiveFailures == 1 && b.lastSuccessAt == nil && b.notBefore == floor)
        // Milliseconds survive the trip through the database.
        let started = try #require(try store.history(of: "a").last?.startedAt)
        #expect(abs(started.timeIntervalSince1970 - 1_800_000_000.123) < 0.0005, "\(started.timeIntervalSince1970)")
    }

    @Test func stateSurvivesReopening() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        do {
            let store = try StateStore(path: path)
            try store.record(record("a", .newData, at: 0,
                                    validators: HTTPValidators(etag: "\"x1\"", lastModified: "Sat, 21 Nov 2026 08:00:00 GMT")))
        }
        let reopened = try StateStore(path: path)
        #expect(try reopened.integrityCheck())
        let state = try #require(try reopened.state(of: "a"))
        #expect(state.etag == "\"x1\"")
        #expect(state.lastModified == "Sat, 21 Nov 2026 08:00:00 GMT")
        #expect(try reopened.history(of: "a").count == 1)
    }

    @Test func historyIsBoundedPerHandler() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        for index in 0..<30 {
            try store.record(record("a", .noData, at: Double(index)), historyLimit: 10)
            try store.record(record("b", .noData, at: Double(index)), historyLimit: 10)
        }
        #expect(try store.history(of: "a", limit: 100).count == 10)
        #expect(try store.history(of: "b", limit: 100).count == 10)
        #expect(try store.history(of: "a", limit: 1).first?.startedAt == Date(timeIntervalSince1970: 1_800_000_029))
    }
}
