import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Testing

/// The per-uid quotas of registrations over D-Bus (`dbus_max_*`): read from the main file,
/// reserved per handler, and the refusal that names each quota passed.
struct RegistrationQuotaTests {
    /// A checked registration of `options` (`url` added) for uid 1000 under `daemon`.
    static func handler(_ name: String, _ options: [String: Registration.Value], daemon: DaemonConfig = DaemonConfig(),
                        caller: Registration.Caller = .unprivileged) throws -> HandlerConfig {
        let registration = Registration(name: try #require(RegisteredName(base: name, uid: 1000)),
                                        options: ["kind": .string("http"), "url": .string("https://example.com/\(name)")].merging(options) { $1 })
        return try registration.handler(daemon: daemon, caller: caller).get()
    }

    @Test func theMainFileSetsEveryQuotaAndRefusesBadValues() throws {
        let folder = try TemporaryDirectory("fetchd-quota-tests")
        defer { folder.remove() }
        let main = try folder.write("""
            dbus_max_handlers = 3
            dbus_max_snapshot_bytes = 1000
            dbus_max_bytes = 5000
            dbus_max_transfer_bytes = 70000
            dbus_max_fetches_per_day = 24
            """, to: "fetchd.toml")
        let quota = try ConfigLoader.load(mainFile: main).daemon.registrationQuota
        #expect(quota.handlers == 3 && quota.snapshotBytes == 1000 && quota.bytes == 5000 && quota.transferBytes == 70000
                && quota.fetchesPerDay == 24)
        #expect(DaemonConfig().registrationQuota == RegistrationQuota())

        let broken = try folder.write("dbus_max_handlers = -1\ndbus_max_fetches_per_day = \"many\"\n", to: "broken.toml")
        let problems = ConfigLoader.check(path: broken)
        #expect(problems.contains { $0.key == "dbus_max_handlers" && $0.line == 1 }, "\(problems)")
        #expect(problems.contains { $0.key == "dbus_max_fetches_per_day" && $0.line == 2 }, "\(problems)")
    }

    @Test func eachHandlerReservesWhatItMayUse() throws {
        var planned = try Self.handler("planned", ["max_bytes": .integer(1000), "retain": .integer(2)])
        var reservation = RegistrationQuota.reservation(of: planned, heartbeatSeconds: 60)
        // A registration learns from ReportUse by default: its budget is its fetches.
        #expect(reservation.bytes == 2000 && reservation.transferBytes == 0 && reservation.fetchesPerDay == Defaults.budgetPerDay)
        planned.usage = []
        planned.minInterval = .seconds(3600)
        #expect(RegistrationQuota.reservation(of: planned, heartbeatSeconds: 60).fetchesPerDay == 24)
        planned.minInterval = .minimum
        #expect(RegistrationQuota.reservation(of: planned, heartbeatSeconds: 600).fetchesPerDay == 144)
        planned.minInterval = .never
        #expect(RegistrationQuota.reservation(of: planned, heartbeatSeconds: 60).fetchesPerDay == 0)
        let transfer = try Self.handler("big", ["kind": .string("transfer"), "max_bytes": .integer(5000)])
        reservation = RegistrationQuota.reservation(of: transfer, heartbeatSeconds: 60)
        #expect(reservation.transferBytes == 5000 && reservation.bytes == 0)
    }

    @Test func withoutMaxBytesAnUnprivilegedRegistrationGetsTheQuotaNotTheFilesDefault() throws {
        var daemon = DaemonConfig()
        daemon.registrationQuota.transferBytes = 1 << 30
        #expect(try Self.handler("feed", [:], daemon: daemon).maxBytes == Defaults.dbusMaxSnapshotBytes)
        #expect(try Self.handler("iso", ["kind": .string("transfer")], daemon: daemon).maxBytes == 1 << 30)
        #expect(try Self.handler("iso", ["kind": .string("transfer")], daemon: daemon, caller: .privileged).maxBytes
                == Defaults.transferMaxBytes)
    }

    @Test func aRegistrationPastAQuotaIsRefusedNamingEachOne() throws {
        var quota = RegistrationQuota()
        quota.handlers = 2
        quota.bytes = 10_000
        quota.fetchesPerDay = 30
        let first = try Self.handler("a", ["max_bytes": .integer(3000), "retain": .integer(2)])
        #expect(quota.problems(adding: first, to: [], heartbeatSeconds: 60).isEmpty)
        let second = try Self.handler("b", ["max_bytes": .integer(3000), "retain": .integer(2), "budget": .string("24/day")])
        let problems = quota.problems(adding: second, to: [first], heartbeatSeconds: 60)
        #expect(problems.count == 2, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("cache bytes (max_bytes × retain): 6000 asked, 4000 of 10000 left") && $0.contains("dbus_max_bytes") })
        #expect(problems.contains { $0.hasPrefix("fetches per day: 24 asked, 18 of 30 left") && $0.contains("dbus_max_fetches_per_day") })
        // Replacing a registration counts it once: the caller passes the others only.
        #expect(quota.problems(adding: first, to: [], heartbeatSeconds: 60).isEmpty)
        let third = try Self.handler("c", ["max_bytes": .integer(10), "retain": .integer(1), "budget": .string("1/day")])
        #expect(quota.problems(adding: third, to: [first, first], heartbeatSeconds: 60).first?.contains("dbus_max_handlers = 2") == true)
        let large = try Self.handler("d", ["max_bytes": .integer(Int64(Defaults.dbusMaxSnapshotBytes + 1)), "retain": .integer(1)])
        #expect(RegistrationQuota().problems(adding: large, to: [], heartbeatSeconds: 60)
            .contains { $0.hasPrefix("max_bytes: \(Defaults.dbusMaxSnapshotBytes + 1) is more than one snapshot may hold") })
    }
}
