/// fetchd's `FetchCompleted` signal: a fetch of one of the caller's handlers ended. fetchd
/// sends it only to its uid's connections that called a method, so a `FetchdClient` receives
/// it once it has made any call.
public struct FetchCompleted: Sendable, Equatable, CustomStringConvertible {
    /// The handler's name as its owner registered it (`news`, not `news@1000`).
    public let name: String
    /// `newData`, `noData`, `failed` or `expired` (the completion-result contract).
    public let result: String
    /// The version published, when the fetch published one (`newData`).
    public let version: String?

    /// An event.
    public init(name: String, result: String, version: String?) {
        self.name = name
        self.result = result
        self.version = version
    }

    /// Whether the fetch published new content, which `FetchdClient.openSnapshot` now reads.
    public var hasNewData: Bool { result == "newData" }

    /// `RESULT VERSION`, the version empty when none.
    public var description: String { "\(result) \(version ?? "")" }
}
