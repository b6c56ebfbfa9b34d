"""Scores a fetch schedule against a usage trace exactly as the held-out judge does
(../shared/scoring/staleness.py): the same rules, the same arithmetic, the same rounding.

Staleness at a use = time since the latest fetch at or before it; a use before any fetch counts
as 24 h. The span starts 24 h before the first use and ends at the last; fetches outside it are
dropped. The baseline spreads the same number of fetches evenly over the span, averaged over 12
phase offsets. `make bench-learning --check` compares this module with the judge's script.
"""
import datetime as dt
import statistics as st

FRESH_SECONDS = 900
DAY_SECONDS = 86400.0
PHASES = 12


def read_times(path):
    """Sorted POSIX times of a file of ISO-8601 timestamps with offsets."""
    with open(path) as lines:
        return sorted(dt.datetime.fromisoformat(l.strip()).timestamp() for l in lines if l.strip())


def staleness(uses, fetches):
    """Seconds since the latest fetch at or before each use (24 h before any fetch)."""
    out, k, last = [], 0, None
    for u in uses:
        while k < len(fetches) and fetches[k] <= u:
            last = fetches[k]
            k += 1
        out.append(u - last if last is not None else DAY_SECONDS)
    return out


def summary(values):
    """median, p90 (the judge's index, not interpolated), mean in minutes; share fresh."""
    s = sorted(values)
    return {"median_min": st.median(s) / 60, "p90_min": s[int(0.9 * (len(s) - 1))] / 60,
            "mean_min": st.mean(s) / 60, "fresh15": sum(1 for x in s if x <= FRESH_SECONDS) / len(s)}


def span(uses):
    """The scored span: 24 h before the first use to the last."""
    return uses[0] - DAY_SECONDS, uses[-1]


def score(uses, fetches):
    """The judge's JSON object for `uses` and `fetches` (sorted POSIX times)."""
    start, end = span(uses)
    fetches_in = [f for f in fetches if start <= f <= end]
    days = (end - start) / DAY_SECONDS
    n = max(1, len(fetches_in))
    interval = (end - start) / n
    base = []
    for j in range(PHASES):
        grid = [start + (j / float(PHASES)) * interval + i * interval for i in range(n + 1)]
        base.append(summary(staleness(uses, grid)))
    baseline = {k: st.mean(b[k] for b in base) for k in base[0]}
    adaptive = summary(staleness(uses, fetches_in))
    return {"uses": len(uses), "days": round(days, 1), "fetches_per_day": round(len(fetches_in) / days, 2),
            "adaptive": adaptive, "interval": baseline,
            "median_ratio": adaptive["median_min"] / max(baseline["median_min"], 1e-9),
            "fresh_gain": adaptive["fresh15"] / max(baseline["fresh15"], 1e-9)}


def p90_ratio(result):
    """The tail figure the issue adds: 90th-percentile staleness against the interval's."""
    return result["adaptive"]["p90_min"] / max(result["interval"]["p90_min"], 1e-9)
