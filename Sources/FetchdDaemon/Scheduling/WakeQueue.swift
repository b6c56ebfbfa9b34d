import FetchdConfig
import FetchdState

/// The order a wake starts its due handlers in, and the window of tasks it runs them with.
enum WakeQueue {
    /// Runs `body` for each of `handlers`, at most `width` at once, and returns the records.
    /// Off the coordinator: the window's bookkeeping (a finished fetch, the next one added)
    /// would otherwise queue for the actor once per fetch, behind the fetches' own work on it.
    static func run(_ handlers: [HandlerConfig], width: Int,
                                      _ body: @escaping @Sendable (HandlerConfig) async -> FetchRecord) async -> [FetchRecord] {
        await withTaskGroup(of: FetchRecord.self) { group in
            var next = handlers.makeIterator()
            for _ in 0..<width {
                guard let handler = next.next() else { break }
                group.addTask { await body(handler) }
            }
            var records: [FetchRecord] = []
            records.reserveCapacity(handlers.count)
            for await record in group {
                records.append(record)
                if let handler = next.next() { group.addTask { await body(handler) } }
            }
            return records
        }
    }

    /// `handlers` reordered so that consecutive ones belong to different hosts where possible
    /// (round robin over hosts, each host's handlers in config order); exec handlers count as
    /// one more "host".
    static func interleavedByHost(_ handlers: [HandlerConfig], key: (HandlerConfig) -> String) -> [HandlerConfig] {
        var byKey: [String: [HandlerConfig]] = [:]
        var keys: [String] = []
        for handler in handlers {
            let key = key(handler)
            if byKey[key] == nil { keys.append(key) }
            byKey[key, default: []].append(handler)
        }
        var result: [HandlerConfig] = []
        result.reserveCapacity(handlers.count)
        var round = 0
        while !keys.isEmpty {
            keys.removeAll { key in
                guard let group = byKey[key], round < group.count else { return true }
                result.append(group[round])
                return false
            }
            round += 1
        }
        return result
    }
}
