import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl usage NAME`: the learned week as a heatmap, recent uses, the next planned fetches.
struct Usage: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show when a handler's content gets used (a week heatmap) and the fetches planned from it.")
    @Argument(help: "The handler.")
    var handler: String
    @OptionGroup var connection: ConnectionOptions

    /// Light to dark; a blank hour had no expected use.
    static let shades: [Character] = [" ", "·", "░", "▒", "▓", "█"]

    func run() throws {
        guard let report = try connection.send(ControlRequest(command: .usage, handler: handler)).usage else { return }
        if connection.json { return try connection.printJSON(report) }
        let sources = report.sources.isEmpty ? "none (set usage = [\"reads\"] to learn)" : report.sources.joined(separator: ", ")
        print("\(report.handler): usage sources \(sources); \(report.daysOfUse) day(s) of use remembered")
        print(Self.heatmap(report.weekByHour))
        if let afterUse = report.afterUse, let line = Self.afterUseLine(afterUse) { print(line) }
        print("\nrecent uses:")
        if report.recentUses.isEmpty { print("  none") }
        for use in report.recentUses { print("  \(TimeText.local(use.at))  \(use.source)") }
        print("\nplanned fetches (next 24 h):")
        if report.plannedFetches.isEmpty { print(report.learns ? "  none" : "  none: min_interval decides") }
        for fetch in report.plannedFetches { print("  \(TimeText.local(fetch.at))  \(TerminalText.visible(fetch.reason))") }
    }

    /// "after a use, the next one is (...) 2.1× 60 min to 75 min, ... later" for the stretches
    /// where the learned risk differs from the time of day's by a quarter or more; nil if none.
    static func afterUseLine(_ afterUse: [UsageReport.AfterUse]) -> String? {
        func span(_ minutes: Int) -> String { minutes % 60 == 0 && minutes >= 120 ? "\(minutes / 60) h" : "\(minutes) min" }
        let notable = afterUse.filter { abs($0.risk - 1) >= 0.25 }.map {
            "\(String(format: "%.1f", $0.risk))× \(span($0.fromMinutes)) to \(span($0.toMinutes))"
        }
        guard !notable.isEmpty else { return nil }
        return "after a use, the next one is (against its time of day alone) " + notable.joined(separator: ", ") + " later"
    }

    /// 7 rows (Monday first) × 24 hours, shaded relative to the busiest hour.
    static func heatmap(_ week: [[Double]]) -> String {
        let peak = week.flatMap { $0 }.max() ?? 0
        var lines = ["     " + (0..<24).map { $0 % 6 == 0 ? String(format: "%-2d", $0) : "  " }.joined()]
        for (index, name) in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].enumerated() where index < week.count {
            let cells = week[index].map { value -> String in
                guard peak > 0, value > 0 else { return "  " }
                let level = min(shades.count - 1, 1 + Int(value / peak * Double(shades.count - 2)))
                return String(repeating: shades[level], count: 2)
            }
            lines.append("\(name)  " + cells.joined())
        }
        return lines.joined(separator: "\n")
    }
}
