"""The yardsticks `make bench-learning` sets beside the planner, each a fetch schedule in POSIX
times that bench/learning_score.py scores like the planner's.

- hindsight: the best fixed daily schedule of BUDGET times of day, chosen with every use known
  (greedy cover of the uses within 15 minutes): what a perfect fixed timer could do.
- online: the same cover chosen again each local midnight from the uses of the last 28 days
  only (every 24 h / BUDGET until there is one): a plain time-of-day learner.
- held-out half: the hindsight cover chosen on the first half of the trace's span and scored
  on the second half only: how much of the hindsight anchor's lead a fixed daily schedule keeps
  on uses it was not chosen on (its in-sample fit is the rest).
The fixed interval is the scorer's own baseline.
"""
import datetime as dt

from learning_score import DAY_SECONDS, FRESH_SECONDS

ONLINE_HISTORY_DAYS = 28


def read_uses(path):
    """(POSIX time, UTC offset in seconds) per use, sorted."""
    uses = []
    with open(path) as lines:
        for line in lines:
            if line.strip():
                moment = dt.datetime.fromisoformat(line.strip())
                uses.append((moment.timestamp(), int(moment.utcoffset().total_seconds())))
    return sorted(uses)


def second_of_day(time, offset):
    return int(time + offset) % 86400


def cover(seconds_of_day, budget):
    """`budget` seconds of the day, greedily each covering the most uncovered uses at most 15
    minutes after it (circular over midnight); left-over fetches go into the longest gaps."""
    left = sorted(seconds_of_day)
    chosen = []
    while left and len(chosen) < budget:
        best, best_covered = None, []
        for candidate in set(left):
            covered = [s for s in left if (s - candidate) % 86400 <= FRESH_SECONDS]
            if len(covered) > len(best_covered) or (len(covered) == len(best_covered) and candidate < best):
                best, best_covered = candidate, covered
        chosen.append(best)
        taken = set(best_covered)
        left = [s for s in left if s not in taken]
    while len(chosen) < budget:
        if not chosen:
            chosen = [int(i * 86400 / budget) for i in range(budget)]
            break
        ordered = sorted(chosen)
        gaps = [((ordered[(i + 1) % len(ordered)] - ordered[i]) % 86400 or 86400, ordered[i]) for i in range(len(ordered))]
        gap, start = max(gaps)
        chosen.append((start + gap // 2) % 86400)
    return sorted(chosen)


def local_midnight(time, offset):
    return time - second_of_day(time, offset)


def offset_near(uses, time):
    """The UTC offset of the use nearest `time` (follows daylight saving and travel)."""
    return min(uses, key=lambda u: abs(u[0] - time))[1]


def schedule(uses, days_times):
    """Fetch times for each local day: days_times(day_start, offset) -> seconds of that day."""
    first, last = uses[0][0] - DAY_SECONDS, uses[-1][0]
    fetches = []
    day = local_midnight(first, uses[0][1])
    while day <= last:
        offset = offset_near(uses, day + 43200)
        day = local_midnight(day + 43200, offset)
        fetches += [day + s for s in days_times(day, offset)]
        day += DAY_SECONDS
    return sorted(fetches)


def hindsight(uses, budget):
    times = cover([second_of_day(t, o) for t, o in uses], budget)
    return schedule(uses, lambda day, offset: times)


def online(uses, budget):
    def times(day, offset):
        past = [second_of_day(t, o) for t, o in uses if day - ONLINE_HISTORY_DAYS * DAY_SECONDS <= t < day]
        return cover(past, budget) if past else [int(i * 86400 / budget) for i in range(budget)]
    return schedule(uses, times)


def held_out_half(uses, budget):
    """(the second half's uses, the fetches of the schedule chosen on the first half over it)."""
    middle = uses[0][0] + (uses[-1][0] - uses[0][0]) / 2
    first = [u for u in uses if u[0] < middle]
    second = [u for u in uses if u[0] >= middle]
    times = cover([second_of_day(t, o) for t, o in first], budget)
    return second, schedule(second, lambda day, offset: times)
