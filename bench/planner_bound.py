#!/usr/bin/env python3
"""What any planner could reach on the synthetic habits at 12 fetches/day: an upper bound.

A policy that KNOWS each habit's true time and jitter (the generator's, ../shared/traces/make_traces.py),
which a learning planner never does, fetches a chain through each habit slot: from a*sigma before
it, every s minutes, until the use comes (or b*sigma after the slot when the use is skipped).
Unplanned uses are fresh only if they fall within 15 minutes after some fetch. The best (a, b, s)
within the budget gives the freshness and median staleness no planner can beat on that habit.
Monte Carlo over many days; deterministic (fixed seed).
"""
import random, statistics

FRESH_MIN = 15

def simulate(slots_wd, slots_we, sigma, a, b, s, days=4000, skip=0.1, extra_per_day=0.3, seed=7):
    rng = random.Random(seed)
    fetches, staleness = 0, []
    for day in range(days):
        slots = slots_we if day % 7 >= 5 else slots_wd
        times = []
        for mu in slots:
            use = None if rng.random() < skip else mu + rng.gauss(0, sigma)
            t = mu - a * sigma
            while t <= mu + b * sigma and (use is None or t <= use):
                times.append(t)
                t += s
            if use is not None:
                before = [f for f in times if f <= use]
                staleness.append(use - before[-1] if before else 24 * 60)
        fetches += len(times)
        for _ in range(int(rng.random() < extra_per_day)):
            use = 8 * 60 + rng.uniform(0, 15 * 60)
            before = [f for f in sorted(times) if f <= use]
            staleness.append(use - before[-1] if before else 24 * 60)
    fresh = sum(1 for x in staleness if x <= FRESH_MIN) / len(staleness)
    return fresh, statistics.median(staleness), fetches / days

def best(name, slots_wd, slots_we, sigma, budget=12):
    results = []
    for s in (5, 7.5, 10, 12.5, 15):
        for a in (0.5, 1, 1.5, 2, 2.5, 3):
            for b in (0.5, 1, 1.5, 2, 3):
                fresh, median, per_day = simulate(slots_wd, slots_we, sigma, a, b, s)
                if per_day <= budget:
                    results.append((fresh, -median, a, b, s, per_day, median))
    by_fresh = max(results)
    feasible = [r for r in results if r[6] <= 6]
    by_both = max(feasible) if feasible else None
    print(f"{name} (jitter sd {sigma} min): best fresh at use {by_fresh[0]:.3f} (median {by_fresh[6]:.1f} min, "
          f"{by_fresh[5]:.1f} fetches/day, chain from -{by_fresh[2]} sd every {by_fresh[4]} min)")
    if by_both:
        print(f"  with median <= 6 min: best fresh at use {by_both[0]:.3f} ({by_both[5]:.1f} fetches/day)")

if __name__ == "__main__":
    hm = lambda h, m: h * 60 + m
    best("habit-office", [hm(8, 55), hm(12, 35), hm(22, 5)], [hm(10, 30), hm(21, 30)], 8)
    best("night-owl", [hm(1, 30), hm(14, 0), hm(18, 45)], [hm(2, 30), hm(15, 0)], 20)
