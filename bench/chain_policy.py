#!/usr/bin/env python3
"""A learned per-habit chain policy on the synthetic habits: a reference for the planner.

Between bench/planner_bound.py (the best policy that KNOWS each habit's time and jitter) and
fetchd's planner (a greedy over a learned 5-minute profile), this policy learns the way fetchd
must (online: a day is planned from the days before it, a use is seen once it happened) but
plans evenly spaced chains through the habits it found. At the start of each day it clusters the
past uses of days of the same kind (weekday or weekend; the other kind until one is seen), with
a 7-day half-life, into habits (uses under 40 minutes apart; a habit is a cluster seen on at
least 30 % of such days) and takes each habit's weighted mean and spread (at least 4 minutes).
Then, for each habit, it fetches every `s` minutes from `a` spreads before the mean to `b`
after, until a use falls in the habit's window (the rest of that chain is not fetched). The
first `cold_days` days of use: every 2 hours. Every fetch is held to the rolling 24-hour budget
(one over it is skipped).

Not fetchd's code and not a bound: a yardstick for a planner built on per-habit chains.
Deterministic. Usage: chain_policy.py [TRACE ...] (default: the three habit traces).
"""
import bisect, datetime as dt, math, os, statistics, sys

TRACES = os.path.join(os.path.dirname(__file__), "..", "Tests", "FetchdPlannerTests", "Traces")
FRESH_MIN = 15

def load(path):
    return [dt.datetime.fromisoformat(line.strip()) for line in open(path) if line.strip()]

def kind_of(day):
    return 1 if day.weekday() >= 5 else 0

def habits(history, day, half_life=7.0, gap=40, least_rate=0.3, least_sd=4.0):
    """(mean, spread, rate) in minutes of the day for `day`, from `history`: (date, minute) of past uses."""
    if not history:
        return []
    first = min(d for d, _ in history)
    past = [first + dt.timedelta(days=i) for i in range((day - first).days)]
    same = [d for d in past if kind_of(d) == kind_of(day)] or past
    weight = lambda d: 0.5 ** ((day - d).days / half_life)
    chosen = set(same)
    points = sorted((minute, weight(d)) for d, minute in history if d in chosen)
    days = sum(weight(d) for d in same)
    clusters, current = [], []
    for minute, w in points:
        if current and minute - current[-1][0] > gap:
            clusters.append(current)
            current = []
        current.append((minute, w))
    if current:
        clusters.append(current)
    found = []
    for cluster in clusters:
        total = sum(w for _, w in cluster)
        mean = sum(m * w for m, w in cluster) / total
        spread = max(least_sd, math.sqrt(sum(w * (m - mean) ** 2 for m, w in cluster) / total))
        if total / days >= least_rate:
            found.append((mean, spread, min(1.0, total / days)))
    return found

def run(path, a, b, s, budget=12, cold_days=2):
    """Fresh-at-use, median staleness (min), fetches per day and fresh-at-use per week."""
    uses = load(path)
    fetches, history, staleness = [], [], []
    first_day, last_day = uses[0].date(), uses[-1].date()
    index, day = 0, first_day
    while day <= last_day:
        today = []
        while index < len(uses) and uses[index].date() == day:
            today.append(uses[index])
            index += 1
        midnight = dt.datetime.combine(day, dt.time(0), tzinfo=(today or uses[min(index, len(uses) - 1):])[0].tzinfo)
        plan = []  # (time, habit or None, window start and end in minutes)
        if len({d for d, _ in history}) < cold_days:
            plan = [(midnight + dt.timedelta(hours=2 * i), None, None) for i in range(12)]
        else:
            for number, (mean, spread, _) in enumerate(habits(history, day)):
                minute = mean - a * spread
                while minute <= mean + b * spread:
                    plan.append((midnight + dt.timedelta(minutes=minute), number,
                                 (mean - 3 * spread - FRESH_MIN, mean + 3 * spread)))
                    minute += s
        windows = {number: window for _, number, window in plan if number is not None}
        served = set()
        events = sorted([(u, 0, None) for u in today] + [(t, 1, n) for t, n, _ in plan], key=lambda e: (e[0], e[1]))
        for moment, is_fetch, number in events:
            if not is_fetch:
                before = bisect.bisect_right(fetches, moment) - 1
                staleness.append((moment - fetches[before]).total_seconds() / 60 if before >= 0 else 24 * 60)
                minute = moment.hour * 60 + moment.minute
                served |= {n for n, (low, high) in windows.items() if low <= minute <= high}
            elif number not in served and (not fetches or moment > fetches[-1]):
                if len(fetches) - bisect.bisect_right(fetches, moment - dt.timedelta(days=1)) < budget:
                    fetches.append(moment)
        history += [(day, u.hour * 60 + u.minute) for u in today]
        day += dt.timedelta(days=1)
    days = (last_day - first_day).days + 1
    weeks = []
    for start in range(0, days, 7):
        low = first_day + dt.timedelta(days=start)
        week = [x for u, x in zip(uses, staleness) if low <= u.date() < low + dt.timedelta(days=7)]
        weeks.append(sum(x <= FRESH_MIN for x in week) / len(week) if week else 1.0)
    fresh = sum(x <= FRESH_MIN for x in staleness) / len(staleness)
    return fresh, statistics.median(staleness), len(fetches) / days, weeks

# (a, b, s): chains from a spreads before a habit's mean to b after, every s minutes.
SETTINGS = [(2.0, 2.0, 12.0), (2.5, 2.5, 12.0), (2.5, 2.0, 15.0)]

if __name__ == "__main__":
    paths = sys.argv[1:] or [os.path.join(TRACES, f"{n}.txt") for n in ("habit-office", "habit-shift", "night-owl")]
    print("learned per-habit chains (bench/chain_policy.py; a yardstick, not fetchd's planner), budget 12/day:")
    for path in paths:
        for a, b, s in SETTINGS:
            fresh, median, per_day, weeks = run(path, a, b, s)
            print(f"  {os.path.basename(path):17s} a={a} b={b} s={s:g}: fresh at use {fresh:.3f}, median {median:.1f} min, "
                  f"{per_day:.1f} fetches/day; by week " + " ".join(f"{w:.2f}" for w in weeks))
