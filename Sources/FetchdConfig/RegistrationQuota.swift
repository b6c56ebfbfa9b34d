import FetchdCore

/// What one uid may hold through handlers registered over D-Bus (the `dbus_max_*` keys of the
/// main file). Every quota is a reservation checked when a handler is registered: what a uid's
/// handlers may keep, download and fetch is bounded before they fetch, so no quota needs
/// enforcing mid-fetch. Root and `control_group` are held to the handler count alone (by the
/// state database). Lowering one keeps the registrations already made; it applies to the next.
public struct RegistrationQuota: Sendable, Equatable {
    /// Handlers per uid (`dbus_max_handlers`).
    public var handlers = Defaults.dbusMaxHandlers
    /// Bytes of one http handler's snapshot (`dbus_max_snapshot_bytes`).
    public var snapshotBytes = Defaults.dbusMaxSnapshotBytes
    /// Bytes the uid's http handlers keep together, `max_bytes` × `retain` each (`dbus_max_bytes`).
    public var bytes = Defaults.dbusMaxBytes
    /// Bytes the uid's transfers download together, `max_bytes` each (`dbus_max_transfer_bytes`).
    public var transferBytes = Defaults.dbusMaxTransferBytes
    /// Fetches per 24 hours of the uid's handlers together (`dbus_max_fetches_per_day`).
    public var fetchesPerDay = Defaults.dbusMaxFetchesPerDay

    /// Every quota at its default.
    public init() {}

    /// The main file's keys.
    static let keys = ["dbus_max_handlers", "dbus_max_snapshot_bytes", "dbus_max_bytes", "dbus_max_transfer_bytes",
                       "dbus_max_fetches_per_day"]

    /// Reads the quotas from the main file's table over `base` (what the files before it set).
    static func read(from reader: inout TableReader, over base: RegistrationQuota = RegistrationQuota()) -> RegistrationQuota {
        var quota = base
        if let value = reader.int("dbus_max_handlers", in: 0...10_000) { quota.handlers = value }
        if let value = reader.int("dbus_max_snapshot_bytes", in: 0...Int.max) { quota.snapshotBytes = value }
        if let value = reader.int("dbus_max_bytes", in: 0...Int.max) { quota.bytes = value }
        if let value = reader.int("dbus_max_transfer_bytes", in: 0...Int.max) { quota.transferBytes = value }
        if let value = reader.int("dbus_max_fetches_per_day", in: 0...1_000_000) { quota.fetchesPerDay = value }
        return quota
    }

    /// What one handler reserves.
    public struct Reservation: Sendable, Equatable {
        /// Cache bytes of an http handler: `max_bytes` × `retain`.
        public var bytes = 0
        /// Download bytes of a transfer: `max_bytes`.
        public var transferBytes = 0
        /// Scheduled fetches per 24 hours: a usage-planned handler's budget, else one per
        /// `min_interval` (per heartbeat for "minimum", none for "never").
        public var fetchesPerDay = 0
    }

    /// What `handler` reserves under a daemon that wakes every `heartbeatSeconds`.
    public static func reservation(of handler: HandlerConfig, heartbeatSeconds: Double) -> Reservation {
        var reservation = Reservation()
        if handler.kind == .transfer { reservation.transferBytes = handler.maxBytes } else {
            reservation.bytes = handler.maxBytes.multipliedReportingOverflow(by: handler.retain).partialValue
        }
        if handler.learnsUsage {
            reservation.fetchesPerDay = handler.budgetPerDay
        } else {
            switch handler.minInterval {
            case .never: reservation.fetchesPerDay = 0
            case .minimum: reservation.fetchesPerDay = Int((86_400 / max(1, heartbeatSeconds)).rounded(.up))
            case .seconds(let seconds): reservation.fetchesPerDay = Int((86_400 / max(1, seconds)).rounded(.up))
            }
        }
        return reservation
    }

    /// Every quota `handler` would exceed beside the uid's `others`, each as a sentence naming
    /// the handler's key, the quota's key and what is left.
    public func problems(adding handler: HandlerConfig, to others: [HandlerConfig], heartbeatSeconds: Double) -> [String] {
        let mine = Self.reservation(of: handler, heartbeatSeconds: heartbeatSeconds)
        let taken = others.map { Self.reservation(of: $0, heartbeatSeconds: heartbeatSeconds) }
        var problems: [String] = []
        if others.count >= handlers {
            problems.append("you have \(others.count) handlers registered, the most a uid may (dbus_max_handlers = \(handlers)); UnregisterHandler one first")
        }
        if handler.kind != .transfer, handler.maxBytes > snapshotBytes {
            problems.append("max_bytes: \(handler.maxBytes) is more than one snapshot may hold (dbus_max_snapshot_bytes = \(snapshotBytes))")
        }
        func check(_ used: Int, _ wanted: Int, _ limit: Int, _ key: String, _ what: String, _ lower: String) {
            let (total, overflow) = used.addingReportingOverflow(wanted)
            guard wanted > 0, overflow || total > limit else { return }
            problems.append("\(what): \(wanted) asked, \(max(0, limit - used)) of \(limit) left for your handlers (\(key)); \(lower)")
        }
        check(taken.map(\.bytes).reduce(0, +), mine.bytes, bytes, "dbus_max_bytes", "cache bytes (max_bytes × retain)",
              "lower max_bytes or retain, or unregister a handler")
        check(taken.map(\.transferBytes).reduce(0, +), mine.transferBytes, transferBytes, "dbus_max_transfer_bytes",
              "transfer bytes (max_bytes)", "lower max_bytes, or unregister a transfer")
        check(taken.map(\.fetchesPerDay).reduce(0, +), mine.fetchesPerDay, fetchesPerDay, "dbus_max_fetches_per_day",
              "fetches per day", "raise min_interval or lower budget, or unregister a handler")
        return problems
    }
}
