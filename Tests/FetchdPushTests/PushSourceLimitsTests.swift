@testable import FetchdPush
import NIOCore
import Testing

/// `PushSourceLimits` alone, on a clock the test moves: what a source is, how many connections
/// and wrong tokens it may have, and what the bounded table forgets.
struct PushSourceLimitsTests {
    private func source(_ address: String) throws -> PushSourceLimits.Source {
        try #require(PushSourceLimits.Source(try SocketAddress(ipAddress: address, port: 1)))
    }

    @Test func sourcesAreCountedByAddressAndIPv6Slash64AndForgottenWhenIdle() throws {
        let start = ContinuousClock.now
        let limits = PushSourceLimits(connectionsPerSource: 2, failuresPerWindow: 2, windowSeconds: 60, trackedMax: 4)
        let a = try source("2001:db8:1:2::10")
        let b = try source("2001:db8:1:2:ffff::1")
        #expect(a == b && a.description == "2001:db8:1:2::/64")
        let mapped = try source("::ffff:192.0.2.1")
        #expect(mapped.description == "192.0.2.1")
        #expect(limits.connectionOpened(from: a) && limits.connectionOpened(from: b))
        #expect(!limits.connectionOpened(from: a), "the /64 holds its two")
        limits.connectionClosed(from: b)
        #expect(limits.connectionOpened(from: a))

        limits.recordFailure(from: mapped, now: start)
        #expect(limits.lockedOut(mapped, now: start) == nil)
        limits.recordFailure(from: mapped, now: start + .seconds(1))
        #expect(limits.lockedOut(mapped, now: start + .seconds(2)) == .seconds(58))
        #expect(limits.lockedOut(mapped, now: start + .seconds(61)) == nil, "the window ended")
        limits.recordFailure(from: mapped, now: start + .seconds(61))
        #expect(limits.lockedOut(mapped, now: start + .seconds(62)) == nil, "a new window counts afresh")

        // A flood of sources: the table stays bounded, and a source holding connections stays.
        for index in 0..<50 {
            let other = try source("198.51.100.\(index)")
            limits.recordFailure(from: other, now: start + .seconds(200 + index))
        }
        #expect(limits.trackedCount <= 4)
        #expect(!limits.connectionOpened(from: a), "its connections are still counted")
    }

    /// Any local user may send from any loopback address, so all of them are one source,
    /// whatever the family: a second local address gets no fresh share of connections.
    @Test func loopbackIsOneSourceWhateverTheFamily() throws {
        let loopback = try source("127.0.0.1")
        for other in ["127.0.0.2", "127.255.3.4", "::ffff:127.0.0.9", "::1"] {
            #expect(try source(other) == loopback, "\(other)")
        }
        let (global, beside, ipv6, sameSlash64) = try (source("2001:db8::1"), source("128.0.0.1"),
                                                       source("2001:db8:1:2::10"), source("2001:db8:1:2:ffff::1"))
        #expect(global != loopback && beside != loopback)
        #expect(ipv6 == sameSlash64, "IPv6 is still grouped by /64")
        let (first, second, third, ipv6Loopback) = try (source("127.0.0.1"), source("127.0.0.2"), source("127.0.0.3"), source("::1"))
        let limits = PushSourceLimits(connectionsPerSource: 2, failuresPerWindow: 2, windowSeconds: 60)
        #expect(limits.connectionOpened(from: first) && limits.connectionOpened(from: second))
        #expect(!limits.connectionOpened(from: third), "loopback holds its two already")
        #expect(!limits.connectionOpened(from: ipv6Loopback))

        let start = ContinuousClock.now
        limits.recordFailure(from: try source("127.0.0.7"), now: start)
        limits.recordFailure(from: ipv6Loopback, now: start + .seconds(1))
        #expect(limits.lockedOut(first, now: start + .seconds(2)) == .seconds(58))
    }

    /// A full table forgets the source seen longest ago among those not locked out, never a
    /// locked-out one: a guesser cannot clear its lockout by sending from many new sources.
    @Test func aLockedOutSourceIsNeverForgottenToMakeRoom() throws {
        let start = ContinuousClock.now
        let limits = PushSourceLimits(connectionsPerSource: 2, failuresPerWindow: 2, windowSeconds: 60, trackedMax: 4)
        let guesser = try source("198.51.100.1")
        limits.recordFailure(from: guesser, now: start)
        limits.recordFailure(from: guesser, now: start + .seconds(1))
        #expect(limits.lockedOut(guesser, now: start + .seconds(1)) == .seconds(59))
        let older = try source("192.0.2.1")
        let newer = try source("192.0.2.2")
        limits.recordFailure(from: older, now: start + .seconds(2))
        limits.recordFailure(from: newer, now: start + .seconds(3))
        for index in 0..<50 {
            limits.recordFailure(from: try source("203.0.113.\(index)"), now: start + .seconds(4) + .milliseconds(index))
            if index == 1 {
                // The table was full: the oldest one not locked out went, and the newer stays counted.
                limits.recordFailure(from: newer, now: start + .seconds(5))
                #expect(limits.lockedOut(newer, now: start + .seconds(5)) != nil, "its first failure was kept")
            }
        }
        #expect(limits.trackedCount <= 4)
        #expect(limits.lockedOut(guesser, now: start + .seconds(10)) == .seconds(50), "still locked out")
        limits.recordFailure(from: older, now: start + .seconds(10))
        #expect(limits.lockedOut(older, now: start + .seconds(10)) == nil, "the oldest was forgotten, not the guesser")
    }

    /// When every remembered source is locked out, a new one is refused (its connection closed)
    /// rather than a lockout forgotten, until a window ends.
    @Test func aTableFullOfLockedOutSourcesRefusesANewSource() throws {
        let start = ContinuousClock.now
        let limits = PushSourceLimits(connectionsPerSource: 2, failuresPerWindow: 1, windowSeconds: 60, trackedMax: 3)
        let guessers = try (1...3).map { try source("198.51.100.\($0)") }
        for guesser in guessers { limits.recordFailure(from: guesser, now: start) }
        let newcomer = try source("192.0.2.1")
        #expect(!limits.connectionOpened(from: newcomer, now: start + .seconds(1)), "no room without forgetting a lockout")
        limits.recordFailure(from: newcomer, now: start + .seconds(1))
        for guesser in guessers {
            #expect(limits.lockedOut(guesser, now: start + .seconds(2)) == .seconds(58), "\(guesser)")
        }
        #expect(limits.connectionOpened(from: newcomer, now: start + .seconds(61)), "the lockouts ended: room again")
    }

    /// Only the configured proxy's exact address is trusted, in either spelling; not the rest of
    /// its source, and nobody when none is configured.
    @Test func onlyTheTrustedProxyAddressIsTrusted() throws {
        let limits = PushSourceLimits(trustedProxy: try SocketAddress(ipAddress: "127.0.0.2", port: 0))
        let proxy = try SocketAddress(ipAddress: "127.0.0.2", port: 40_000)
        let mapped = try SocketAddress(ipAddress: "::ffff:127.0.0.2", port: 40_000)
        #expect(limits.isTrustedProxy(proxy) && limits.isTrustedProxy(mapped))
        for other in ["127.0.0.1", "::1", "192.0.2.1"] {
            let address = try SocketAddress(ipAddress: other, port: 40_000)
            #expect(!limits.isTrustedProxy(address), "\(other)")
        }
        #expect(!PushSourceLimits().isTrustedProxy(proxy), "none configured: nobody is trusted")
        #expect(!limits.isTrustedProxy(nil))
    }
}
