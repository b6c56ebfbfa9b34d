import Foundation
import Glibc

/// The system's local time zone as the C library knows it (`TZ`, else /etc/localtime), for the
/// few local times the daemon needs: the UTC offset a use is recorded with and the planner plans
/// in, and the `HH:mm` of the status line. The C library reads the zone at the first call and
/// again whenever any code in the process calls `tzset`, `localtime` or `mktime` and
/// /etc/localtime has changed, so a `timedatectl set-timezone` may be seen before a restart;
/// a restart always sees it.
///
/// Why not Foundation's `TimeZone.current` or a `DateFormatter`: on Linux both are backed by
/// ICU, whose zone and calendar data the first use pages in (1 MiB of an idle daemon's resident
/// memory) and whose formatter cost a status line more than the rest of it.
public enum SystemTimeZone {
    /// Seconds east of UTC at `date`, daylight saving time included
    /// (`TimeZone.current.secondsFromGMT(for:)`).
    public static func secondsFromGMT(at date: Date) -> Int {
        Int(localParts(date).tm_gmtoff)
    }

    /// `08:05`: the local hour and minute of `date`.
    public static func hourMinute(_ date: Date) -> String {
        clockText(date, seconds: false)
    }

    /// `08:05:09`: the local hour, minute and second of `date`.
    public static func hourMinuteSecond(_ date: Date) -> String {
        clockText(date, seconds: true)
    }

    private static func clockText(_ date: Date, seconds: Bool) -> String {
        let parts = localParts(date)
        var text = DigitText(capacity: 8)
        text.append(Int(parts.tm_hour), width: 2)
        text.append(":")
        text.append(Int(parts.tm_min), width: 2)
        if seconds {
            text.append(":")
            text.append(Int(parts.tm_sec), width: 2)
        }
        return text.text
    }

    private static func localParts(_ date: Date) -> tm {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&time, &parts)
        return parts
    }
}
