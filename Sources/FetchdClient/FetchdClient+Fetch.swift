extension FetchdClient {
    /// Starts a fetch of `name` and waits for its `FetchCompleted`, at most `timeout` (the
    /// handler's deadline is a good bound). Listens before asking, so a fetch that ends at once
    /// is not missed. A fetch already running is joined: its result is the one returned.
    /// Throws `Timeout` when no result came in time, `Disconnected` when the connection closed.
    public func fetch(_ name: String, timeout: Duration) async throws(FetchdError) -> FetchCompleted {
        let events = completions()
        try await fetchNow(name)
        // FetchCompleted names the handler as its owner registered it; root and the control
        // group may ask for another uid's as NAME@UID.
        let base = name.split(separator: "@", maxSplits: 1).first.map(String.init) ?? name
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await event in events where event.name == base { return .completed(event) }
                return .closed
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
        switch outcome {
        case .completed(let event): return event
        case .timedOut:
            throw FetchdError(name: FetchdError.Name.timeout, message: "no FetchCompleted for \(name) within \(timeout)")
        case .closed:
            throw FetchdError(name: FetchdError.Name.disconnected, message: "the connection closed before \(name)'s fetch ended")
        }
    }

    /// How a wait for a result ended.
    private enum Outcome: Sendable {
        case completed(FetchCompleted)
        case timedOut
        case closed
    }
}
