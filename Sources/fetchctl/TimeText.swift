import FetchdCore
import Foundation

/// Formatting for people: local times, "3m ago" / "in 5m", aligned tables.
enum TimeText {
    static func local(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    static func relative(_ date: Date?, now: Date = Date()) -> String {
        guard let date else { return "never" }
        let seconds = date.timeIntervalSince(now)
        if abs(seconds) < 1 { return "now" }
        if date == .distantPast || seconds < -86_400 * 365 { return "now" }
        let text = HumanDuration.format(seconds: abs(seconds).rounded())
        return seconds < 0 ? "\(text) ago" : "in \(text)"
    }

    static func printTable(_ rows: [[String]]) {
        guard let first = rows.first else { return }
        let widths = (0..<first.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(TerminalText.visible(cells.joined(separator: "  ")))
        }
    }
}
