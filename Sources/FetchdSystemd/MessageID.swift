/// journald `MESSAGE_ID`s of the events an administrator may want to find or alert on
/// (`journalctl MESSAGE_ID=...`). Never change a published value.
public enum MessageID {
    /// A fetch finished (any result); its fields say which.
    public static let fetchFinished = "6ef5c4eb31784cb68e07fb5cf7b70cd8"
    /// A fetch ran past its deadline and was stopped.
    public static let deadlineExpired = "9d3188ae58c5426fbb90ddb00519981b"
    /// A background transfer ended: finished, failed, or (with `result=paused`) paused.
    public static let transferFinished = "3f1c6b0e2a8d4e57b9c4d21f8e6a0b73"
    /// A configuration file was rejected (at start-up or reload).
    public static let configRejected = "182a1ce73ae244ce9d7d4633fdbb2131"
    /// The daemon finished starting and is ready.
    public static let ready = "97bff302a77c414ea428491323c8636e"
    /// A configuration reload took effect.
    public static let reloaded = "22023a6b45a9435faaa67173b0ae1a87"

    /// A scheduled fetch began to wait for its conditions (network, power, battery); the
    /// message says which.
    public static let conditionWait = "5c1df485456b4d90a126ae52fb6df113"

    /// A handler failed `alert_after` times in a row: it is failing (its alert program ran, or
    /// the entry says why not). `journalctl MESSAGE_ID=...` lists the failing handlers.
    public static let handlerFailing = "40761c38b25b42e69d8d3d14bad74a06"
    /// A failing handler succeeded again (its alert program ran once more, or the entry says why not).
    public static let handlerRecovered = "0e3a5a5541f94621993a8fa8113fd600"

    /// The logger metadata key whose value becomes the entry's `MESSAGE_ID`.
    public static let metadataKey = "message_id"
}
