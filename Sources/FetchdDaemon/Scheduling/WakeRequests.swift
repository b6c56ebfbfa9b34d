/// Why something asked the wake clock for a wake (said in the debug log).
enum WakeCause: String, Sendable {
    /// The daemon started.
    case start
    /// The internal timer: something became due, or the heartbeat.
    case timer
    /// `fetchctl wake`, which systemd's wake timers run.
    case request
    /// A use was recorded: the plan changed, the next fetch may be sooner.
    case use
    /// The power or the network changed: handlers waiting for them may run.
    case conditions
    /// A reload was applied.
    case reload
}

/// What the watchers, the control socket and a reload see of the wake clock: a way to ask for a
/// wake, and for a new plan without one.
protocol WakeRequests: Sendable {
    /// Asks for a wake now.
    func wake(_ cause: WakeCause)
    /// Asks for a new plan (a deferred push may be due before the next planned wake).
    func replan()
}
