import ArgumentParser
import FetchdControl
import Foundation

/// `fetchctl transfers`: the background transfers, running or waiting to resume.
struct Transfers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the background transfers: progress, rate, time left, why one waits.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        guard let status = try connection.send(ControlRequest(command: .status, markSeen: false)).status else { return }
        let transfers = status.handlers.filter { $0.kind == "transfer" }
        if connection.json { return try connection.printJSON(transfers) }
        guard !transfers.isEmpty else {
            print("no transfer handlers are configured (kind = \"transfer\")")
            return
        }
        var rows = [["TRANSFER", "STATE", "PROGRESS", "RATE", "LEFT", "LAST RESULT"]]
        for handler in transfers {
            rows.append([handler.name, Self.state(of: handler), handler.transfer.map(Self.progress) ?? "-",
                         handler.transfer?.bytesPerSecond.map { Self.bytes($0) + "/s" } ?? "-",
                         handler.transfer?.etaSeconds.map(Self.duration) ?? "-",
                         (handler.lastResult ?? "-") + (handler.lastResult == "failed" ? " (\(handler.lastReason ?? ""))" : "")])
        }
        TimeText.printTable(rows)
    }

    /// "running", "waiting: reason", "resumes in 2 min", "idle".
    static func state(of handler: HandlerStatus) -> String {
        switch handler.transfer?.state {
        case .running?: return "running"
        case .partial?:
            if let waiting = handler.waitingFor { return "paused: \(waiting)" }
            return "resumes " + TimeText.relative(handler.transfer?.resumesAt.map { max($0, Date()) })
        case nil:
            if handler.running { return "queued: waiting for a slot (transfer_max_active)" }
            return handler.waitingFor.map { "waiting: \($0)" } ?? "idle"
        }
    }

    /// "120.0 MiB of 200.0 MiB (60 %)".
    static func progress(_ transfer: TransferStatus) -> String {
        guard let total = transfer.totalBytes, total > 0 else { return bytes(transfer.bytes) }
        return "\(bytes(transfer.bytes)) of \(bytes(total)) (\(transfer.bytes * 100 / total) %)"
    }

    /// Binary units, one decimal.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// "1 h 05 min", "3 min 20 s", "12 s".
    static func duration(_ seconds: Int) -> String {
        if seconds >= 3600 { return String(format: "%d h %02d min", seconds / 3600, seconds % 3600 / 60) }
        if seconds >= 60 { return String(format: "%d min %02d s", seconds / 60, seconds % 60) }
        return "\(seconds) s"
    }
}
