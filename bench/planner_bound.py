#!/usr/bin/env python3
"""What ANY planner could reach on the synthetic habits at a given budget: an upper bound.

The policy bounded here is stronger than any planner fetchd can have. It KNOWS each habit's
true time, jitter and skip rate (the generator's, ../shared/traces/make_traces.py), sees each
use the moment it happens (so it stops spending on a habit whose use came), and may choose any
fetch times at all. Its only limits are the budget and what it cannot know: where, within the
habit's jitter, today's use will fall.

Three relaxations make the bound computable exactly; each can only raise it:
- the rolling 24-hour budget is replaced by "at most B fetches in each 24 hours starting at a
  fixed hour" (every such window is one of the rolling windows, so a policy within the rolling
  budget is within this one). The hour is chosen so that no habit's window (6 spreads either
  side) crosses it, which splits the trace into independent days;
- the unplanned uses (at most one a day, on 30 % of days, uniform over 08:00-23:00) are
  credited per fetch: a fetch serves at most the unplanned use of the 15 minutes after it (6
  for "within 6 minutes"), whose chance, given that none came earlier that day, is at most
  15 x 0.3 / 900 / (1 - 0.3) (the hazard is highest at the end of the span). Every fetch,
  inside a habit's window or not, is credited that much, and fetches left when the day's last
  habit is over are spent on it: a fresh unplanned use needs a fetch in its 15 minutes, so
  this sum is never below what any policy gets from them;
- the goal "median staleness <= 6 min" is taken in expectation: at least half of the expected
  uses within 6 minutes of a fetch.

For one day it is then an exact dynamic programme: the day's habits in order, each on a
1-minute grid over 6 spreads either side of its time, in the state (minutes since the last
fetch, fetches spent today); a habit's use ends its window (the hazard of the skip-thinned
normal); the fetches left pass on to the next habit. Lagrangian duality gives the bound with
the median goal: for every nu >= 0,
    fresh share <= (max over policies of E[fresh + nu * within-6-min] - nu * U / 2) / U,
with U the expected uses per day; the script prints the least such value over a grid of nu.

All figures are expectations over the generator's randomness: one 45- or 60-day trace can land
a few points either side (about +-0.03 at one standard deviation for 120 uses).
Usage: planner_bound.py [--budget N] [--step MIN] [--check]. Deterministic; about 10 s.
"""
import argparse, collections, math, random

FRESH_MIN, WITHIN_MIN = 15, 6
SKIP, EXTRA_PER_DAY, EXTRA_SPAN_MIN = 0.1, 0.3, 15 * 60  # make_traces.py: day_uses, habit
NU_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)

def hazards(sigma, step):
    """Per grid step over 6 spreads either side of the habit's time: the chance that its use
    comes in the step, given that it has not come before (the skip-thinned normal)."""
    low = -6 * sigma
    cdf = lambda x: 0.5 * (1 + math.erf(x / (sigma * math.sqrt(2))))
    result, not_yet = [], 1.0
    for i in range(int(12 * sigma / step)):
        use_in = (1 - SKIP) * (cdf(low + (i + 1) * step) - cdf(low + i * step))
        result.append(use_in / not_yet if not_yet > 1e-15 else 0.0)
        not_yet -= use_in
    return result

def choices(hazard, reward, value, after, age, spent, stale, budget, credit):
    """The expected value of not fetching and of fetching (None when the budget is spent) in a
    step at `age` steps since the last fetch with `spent` fetches spent; `value` is the table of
    the next step, `after` the value of the fetches left once the habit's use came."""
    stay = hazard * (reward(age) + after[spent]) + (1 - hazard) * value[min(age + 1, stale)][spent]
    if spent == budget:
        return stay, None
    return stay, credit + hazard * (reward(0) + after[spent + 1]) + (1 - hazard) * value[1][spent + 1]

def habit_table(sigma, after, budget, nu, credit, step=1.0, steps_kept=None):
    """For each count of fetches spent before this habit's window: the best expected reward
    (fresh + nu * within 6 min) in the window plus `after`'s value of the fetches left.
    `steps_kept`, a list, receives the value table after each step (last step first)."""
    stale = int(FRESH_MIN / step) + 1  # minutes since the last fetch, capped: no fresh use after it
    def reward(age_steps):  # a use during the step `age_steps` after the fetch's step
        age = (age_steps + 0.5) * step
        return (1.0 if age <= FRESH_MIN else 0.0) + (nu if age <= WITHIN_MIN else 0.0)
    # value[age][spent] at the end of the window: the use was skipped, the fetches left go on.
    value = [list(after) for _ in range(stale + 1)]
    for hazard in reversed(hazards(sigma, step)):
        if steps_kept is not None:
            steps_kept.append(value)
        value = [[max(x for x in choices(hazard, reward, value, after, age, spent, stale, budget, credit)
                      if x is not None)
                  for spent in range(budget + 1)] for age in range(stale + 1)]
    return value[stale]

def day_value(sigma, habits, budget, nu, step):
    """The best expected reward of a day of `habits` habit windows within `budget` fetches."""
    # The most one fetch can do for the unplanned use: its chance per minute, given none came
    # earlier, is largest at the end of the span.
    rate = EXTRA_PER_DAY / EXTRA_SPAN_MIN / (1 - EXTRA_PER_DAY)
    credit = FRESH_MIN * rate + nu * WITHIN_MIN * rate
    after = [(budget - spent) * credit for spent in range(budget + 1)]  # fetches left at the end
    for _ in range(habits):
        after = habit_table(sigma, after, budget, nu, credit, step)
    return after[0]

def bound(sigma, habits_by_day, budget, step=1.0):
    """(fresh share without the median goal, fresh share with it) over a week of days."""
    uses = sum((1 - SKIP) * n + EXTRA_PER_DAY for n in habits_by_day) / len(habits_by_day)
    def lagrangian(nu):
        # Days with as many habits have the same value: one programme for each count.
        value = sum(count * day_value(sigma, n, budget, nu, step)
                    for n, count in collections.Counter(habits_by_day).items()) / len(habits_by_day)
        return (value - nu * uses / 2) / uses
    return lagrangian(0.0), min(lagrangian(nu) for nu in NU_GRID)

# Habit windows per 24 hours from a boundary no window crosses (the generator's slots):
# habit-office (and habit-shift, before and after its change): 3 a weekday, 2 a weekend day,
# jitter 8 min, days from 04:00; night-owl: jitter 20 min, days from 08:00 (14:00, 18:45 and the
# next night's 01:30, or 02:30 before a weekend day: 3 from Monday to Friday, 2 on Saturday and
# Sunday).
TRACES = [("habit-office, habit-shift", 8, [3, 3, 3, 3, 3, 2, 2]),
          ("night-owl", 20, [3, 3, 3, 3, 3, 2, 2])]

def check(days=20_000, sigma=20, habits=3, budget=12):
    """The programme against what can be computed another way: one fetch per habit (the best
    15 minutes of the skip-thinned normal), and a Monte Carlo of its own optimal policy on a
    night-owl weekday (no credit for unplanned uses), which must give the programme's value."""
    one = habit_table(sigma, [0.0, 0.0], 1, 0.0, 0.0)[0]
    closed = (1 - SKIP) * math.erf(7.5 / (sigma * math.sqrt(2)))
    print(f"check: one fetch per habit: programme {one:.5f}, closed form 0.9 x (2 Phi(7.5/{sigma}) - 1) = {closed:.5f}")
    tables, after = [], [0.0] * (budget + 1)
    for _ in range(habits):  # the day's last habit first
        kept = []
        after_next = habit_table(sigma, after, budget, 0.0, 0.0, steps_kept=kept)
        tables.append((list(reversed(kept)), after))  # kept[i]: the value after step i
        after = after_next
    tables.reverse()
    low, stale, steps = -6 * sigma, FRESH_MIN + 1, hazards(sigma, 1.0)
    reward = lambda age: 1.0 if age + 0.5 <= FRESH_MIN else 0.0
    rng, fresh = random.Random(7), 0
    for _ in range(days):
        spent = 0
        for values, later in tables:
            use = None if rng.random() < SKIP else rng.gauss(0, sigma)
            age = stale
            for i, (hazard, value) in enumerate(zip(steps, values)):
                stay, fetch = choices(hazard, reward, value, later, age, spent, stale, budget, 0.0)
                if fetch is not None and fetch > stay:
                    spent, age = spent + 1, 0
                if use is not None and low + i <= use < low + i + 1:
                    fresh += reward(age)
                    break
                age = min(age + 1, stale)
    print(f"check: optimal policy on a night-owl weekday at {budget}/day: programme {after[0]:.3f} fresh uses, "
          f"Monte Carlo of {days} days {fresh / days:.3f}")

def up(bound):
    """A bound rounded up to 3 decimals (rounding down would claim a little more than shown)."""
    return f"{math.ceil(bound * 1000) / 1000:.3f}"

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=12, help="fetches per day (default 12)")
    parser.add_argument("--step", type=float, default=1.0,
                        help="the grid in minutes (default 1; 0.5 gives the same bounds)")
    parser.add_argument("--check", action="store_true", help="check the programme first (a few seconds more)")
    arguments = parser.parse_args()
    budget, step = arguments.budget, arguments.step
    if arguments.check:
        check()
    with_median = {}
    for name, sigma, habits_by_day in TRACES:
        fresh, with_median[sigma] = bound(sigma, habits_by_day, budget, step)
        print(f"{name} (jitter sd {sigma} min, {budget}/day): any planner, even one that knows the habit, "
              f"in expectation: fresh at use <= {up(fresh)}; "
              f"with a median staleness <= 6 min: <= {up(with_median[sigma])}")
    # The least budget at which night-owl's goal (fresh >= 0.85, median <= 6 min) is not ruled out.
    _, sigma, habits_by_day = TRACES[1]
    more, below = budget, with_median[sigma]
    while below < 0.85 and more < budget + 8:
        more += 1
        below, previous = bound(sigma, habits_by_day, more, step)[1], below
        if below >= 0.85:
            print(f"night-owl: the goal (fresh >= 0.85, median <= 6 min) needs at least {more} fetches/day "
                  f"(bound at {more - 1}/day: {up(previous)})")
    if more == budget and below >= 0.85:
        print(f"night-owl: the goal (fresh >= 0.85, median <= 6 min) is not ruled out at {budget}/day")
    elif below < 0.85:
        print(f"night-owl: the goal (fresh >= 0.85, median <= 6 min) is ruled out up to {more}/day")

if __name__ == "__main__":
    main()
