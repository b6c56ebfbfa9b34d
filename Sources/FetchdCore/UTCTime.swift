#if canImport(Glibc)
import Glibc
#endif

/// UTC calendar times as seconds since 1970, in the calendar `gmtime_r` writes them in
/// (proleptic Gregorian): what `HTTPDate` and a snapshot's `meta.json` times are read with.
public enum UTCTime {
    /// The seconds since 1970 of `year-month-day hour:minute:second` UTC (month 1 to 12), or nil
    /// when the month has no such day: `timegm` carries 31 Nov into 1 Dec and says so by
    /// changing the fields.
    public static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int? {
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(hour), Int32(minute), Int32(second))
        let seconds = timegm(&parts)
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        return Int(seconds)
    }
}
