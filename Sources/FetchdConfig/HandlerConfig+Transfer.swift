import FetchdCore

extension HandlerConfig {
    /// Reads the transfer-only keys (`sha256`, `max_bytes_per_second`, `stall_timeout`,
    /// `on_complete`) and gives a transfer its own defaults for `max_bytes` and `min_interval`.
    mutating func readTransferOptions(_ reader: inout TableReader) {
        if let digest = reader.string("sha256") {
            let lower = digest.lowercased()
            if lower.count == 64, lower.allSatisfy(\.isHexDigit) {
                sha256 = lower
            } else {
                reader.report("sha256", "\"\(digest)\" is not a SHA-256 digest; expected 64 hexadecimal digits")
            }
        }
        if let rate = reader.int("max_bytes_per_second", in: 0...Int.max) { maxBytesPerSecond = rate }
        if let seconds = reader.durationSeconds("stall_timeout", in: 1...86_400) { stallSeconds = seconds }
        if let command = reader.stringArray("on_complete", example: HandlerConfig.commandExample) {
            if command.first?.isEmpty ?? true {
                reader.report("on_complete", "the program (first element) is missing; expected an argv such as [\"/usr/bin/prog\"]")
            } else {
                onComplete = command
            }
        }
        if kind == .transfer {
            if reader.table["max_bytes"] == nil { maxBytes = Defaults.transferMaxBytes }
            // "As often as the daemon wakes" would download a large file every heartbeat.
            if reader.table["min_interval"] == nil { minInterval = .seconds(Defaults.transferMinIntervalSeconds) }
        }
    }

    /// Reports keys that do not belong to this handler's kind as far as transfers are concerned.
    func checkTransferKeys(_ reader: inout TableReader) {
        if kind == .transfer {
            for (key, reason) in HandlerKeys.refusedByTransfers.sorted(by: { $0.key < $1.key }) where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" does not apply to transfers: \(reason)")
            }
            if reader.table["deadline"] != nil {
                reader.report("deadline", "transfers are not bound by a fetch deadline; use \"stall_timeout\" to end a stalled one")
            }
            if let url {
                let lower = url.lowercased()
                if !(lower.hasPrefix("http://") || lower.hasPrefix("https://")) {
                    reader.report("url", "\"\(url)\" is not an http:// or https:// URL")
                }
            } else if reader.table["url"] == nil {
                reader.report(nil, "a transfer handler needs a \"url\" key")
            }
            for key in HandlerKeys.execOnly where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" belongs to exec handlers; this one is transfer")
            }
        } else {
            for key in HandlerKeys.transferOnly where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" belongs to transfer handlers; this one is \(kind.rawValue)")
            }
        }
    }
}
