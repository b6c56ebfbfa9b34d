import FetchdConfig
import FetchdCore

/// The order a wake starts its due handlers in, and the window of tasks it runs them with.
enum WakeQueue {
    /// Runs `body` for each of `items`, at most `width` at once, and folds their records into
    /// `result` with `add` as they finish.
    /// Off the coordinator: the window's bookkeeping (a finished fetch, the next one added)
    /// would otherwise queue for the actor once per fetch, behind the fetches' own work on it.
    static func run<Item: Sendable, Result: Sendable>(_ items: [Item], width: Int, into result: Result,
                                                      _ add: @Sendable (inout Result, CompletedFetch) -> Void,
                                                      _ body: @escaping @Sendable (Item) async -> CompletedFetch) async -> Result {
        await withTaskGroup(of: CompletedFetch.self) { group in
            var next = items.makeIterator()
            for _ in 0..<width {
                guard let item = next.next() else { break }
                group.addTask { await body(item) }
            }
            var result = result
            for await record in group {
                add(&result, record)
                if let item = next.next() { group.addTask { await body(item) } }
            }
            return result
        }
    }

    /// Why a wake started by `trigger` fetches `handler`: a scheduled fetch of a handler
    /// planned from its usage runs for a predicted use.
    static func cause(of handler: HandlerConfig, in trigger: FetchTrigger) -> FetchTrigger {
        trigger == .timer && handler.learnsUsage ? .usage : trigger
    }

    /// `items` (handlers, or their places in the configuration) reordered so that consecutive
    /// ones belong to different hosts where possible (round robin over hosts, each host's
    /// handlers in config order); exec handlers count as one more "host".
    static func interleavedByHost<Item>(_ items: [Item], key: (Item) -> String) -> [Item] {
        var byKey: [String: [Item]] = [:]
        var keys: [String] = []
        for item in items {
            let key = key(item)
            if byKey[key] == nil { keys.append(key) }
            byKey[key, default: []].append(item)
        }
        var result: [Item] = []
        result.reserveCapacity(items.count)
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
