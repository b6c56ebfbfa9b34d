#!/usr/bin/env python3
"""Writes the adversarial usage traces the planner's safeguard is tested on
(Tests/FetchdPlannerTests/Traces/adversarial-*.txt; make bench-learning reports them too):
people a learned schedule can serve worse than a fixed interval.

  adversarial-random       uses at random instants of the whole day and night, 4 a day on average
                           (a Poisson count), no habit and no clustering: nothing to learn;
  adversarial-shift        three daily habits (08:10, 12:40, 19:20 +- 10 min) that all move 4 hours
                           later on day 45 of 90;
  adversarial-drift        three habits 4 h apart that come 40 minutes later every day (a sleep-wake
                           rhythm longer than a day): yesterday's times are always wrong;
  adversarial-day-to-night a daytime user (uses scattered over 09:00-18:00, no habit) who becomes a
                           night user (uses scattered over 22:00-05:00) on day 40 of 90.

Deterministic (fixed seeds): rerunning writes byte-identical files.
usage: python3 bench/adversarial_traces.py
"""
import datetime as dt, os, random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "Tests", "FetchdPlannerTests", "Traces")
START = dt.datetime(2026, 3, 2)  # a Monday
DAYS = 90


def poisson(rng, mean):
    """A Poisson count (Knuth's method; small means only)."""
    limit, k, p = pow(2.718281828459045, -mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def random_use(rng):
    uses = []
    for day in range(DAYS):
        base = START + dt.timedelta(days=day)
        uses += [base + dt.timedelta(seconds=rng.uniform(0, 86400)) for _ in range(poisson(rng, 4))]
    return uses, 1


def shift(rng):
    uses = []
    for day in range(DAYS):
        base = START + dt.timedelta(days=day)
        late = 240 if day >= 45 else 0
        for minute in (490, 760, 1160):
            if rng.random() < 0.85:
                uses.append(base + dt.timedelta(minutes=minute + late + rng.gauss(0, 10)))
    return uses, 2


def drift(rng):
    uses = []
    for day in range(DAYS):
        base = START + dt.timedelta(days=day)
        for minute in (540, 780, 1020):
            if rng.random() < 0.9:
                uses.append(base + dt.timedelta(minutes=(minute + 40 * day) % 1440 + rng.gauss(0, 5)))
    return uses, 0


def day_to_night(rng):
    uses = []
    for day in range(DAYS):
        base = START + dt.timedelta(days=day)
        night = day >= 40
        start, length = (22 * 60, 7 * 60) if night else (9 * 60, 9 * 60)
        uses += [base + dt.timedelta(minutes=start + rng.uniform(0, length)) for _ in range(poisson(rng, 3.5))]
    return uses, -5


def write(name, uses, offset_hours):
    zone = dt.timezone(dt.timedelta(hours=offset_hours))
    path = os.path.join(OUT, name + ".txt")
    with open(path, "w") as out:
        # Local times at a fixed offset, written with it.
        out.write("".join(u.replace(microsecond=0, tzinfo=zone).isoformat() + "\n" for u in sorted(uses)))
    print(f"wrote {os.path.relpath(path)}: {len(uses)} uses")


def main():
    for seed, (name, make) in enumerate([("adversarial-random", random_use), ("adversarial-shift", shift),
                                         ("adversarial-day-to-night", day_to_night), ("adversarial-drift", drift)]):
        write(name, *make(random.Random(3800 + seed)))


if __name__ == "__main__":
    main()
