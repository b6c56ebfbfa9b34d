#!/usr/bin/env python3
"""make bench-planner: the adaptive planner on the synthetic usage traces (fetchctl simulate).

For each trace: the adaptive planner, a fixed interval with the same number of fetches and the
oracle, at a budget of 12 fetches/day; then planning time per decision against history length
(the habit-office trace cut after 7, 14, 28 and 60 days).
"""
import bisect, datetime, json, os, subprocess, sys, tempfile

TRACES = os.path.join(os.path.dirname(__file__), "..", "Tests", "FetchdPlannerTests", "Traces")

def simulate(fetchctl, trace):
    out = subprocess.run([fetchctl, "simulate", "--usage", trace, "--budget", "12/day", "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)

# habit-shift's habit changes on this day of the trace (make_traces.py: shift_at=30).
SHIFT_DAY = 30

def fresh_after_change(fetchctl, folder):
    """habit-shift: the share of uses fresh at use (<= 15 min), by days since the habit changed."""
    trace = os.path.join(TRACES, "habit-shift.txt")
    emitted = os.path.join(folder, "habit-shift-fetches.txt")
    subprocess.run([fetchctl, "simulate", "--usage", trace, "--budget", "12/day", "--emit-fetches", emitted],
                   capture_output=True, check=True)
    parse = lambda path: [datetime.datetime.fromisoformat(l.strip()) for l in open(path) if l.strip()]
    uses, fetches = parse(trace), sorted(f.timestamp() for f in parse(emitted))
    first = uses[0].date()
    spans = {"7 to 30 days before": (-23, 0), "on the day": (0, 1), "1 to 3 days after": (1, 4),
             "4 to 7 days after": (4, 8), "8 to 11 days after": (8, 12), "12 days or more after": (12, 99)}
    result = {}
    for label, (low, high) in spans.items():
        fresh = [u.timestamp() - fetches[bisect.bisect_right(fetches, u.timestamp()) - 1] <= 900
                 for u in uses if low <= (u.date() - first).days - SHIFT_DAY < high]
        result[label] = {"uses": len(fresh), "fresh": sum(fresh) / max(1, len(fresh))}
    return result

def main():
    fetchctl = os.path.join(sys.argv[1], "fetchctl")
    results = {}
    print("| trace | strategy | fetches/day | median staleness | p90 | mean | fresh at use |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in ["habit-office", "habit-shift", "night-owl", "random-user", "bursty-dst"]:
        report = simulate(fetchctl, os.path.join(TRACES, name + ".txt"))
        results[name] = report
        for strategy, key in [("adaptive", "adaptive"), ("fixed interval", "fixedInterval"), ("oracle", "oracle")]:
            m = report[key]
            print(f"| {name} | {strategy} | {m['fetchesPerDay']:.1f} | {m['medianStalenessMinutes']:.1f} min | "
                  f"{m['p90StalenessMinutes']:.0f} min | {m['meanStalenessMinutes']:.0f} min | {m['freshAtUse']:.2f} |")
    print()
    for name in ["habit-office", "habit-shift", "night-owl", "random-user", "bursty-dst"]:
        weeks = " ".join(f"{x:.2f}" for x in results[name]["freshAtUseByWeek"])
        print(f"{name}: fresh at use by week: {weeks}")
    print()
    lines = open(os.path.join(TRACES, "habit-office.txt")).read().split()
    with tempfile.TemporaryDirectory() as folder:
        results["habit-shift-after-change"] = fresh_after_change(fetchctl, folder)
        print("habit-shift, fresh at use by days since the habit changed: " + ", ".join(
            f"{label} {v['fresh']:.2f} ({v['uses']} uses)" for label, v in results["habit-shift-after-change"].items()))
        print()
        for days in [7, 14, 28, 60]:
            cut = [l for l in lines if l[:10] < f"2026-{3 + (1 + days) // 31:02d}-{(1 + days) % 31 + 1:02d}"] if days < 60 else lines
            path = os.path.join(folder, f"cut-{days}.txt")
            open(path, "w").write("\n".join(cut) + "\n")
            micro = simulate(fetchctl, path)["planningMicroseconds"]
            results[f"planning-{days}d"] = micro
            print(f"history of {days:>2} days ({len(cut):>3} uses): {micro:.0f} µs per decision")
    if len(sys.argv) > 2:
        json.dump(results, open(sys.argv[2], "w"), indent=2)

if __name__ == "__main__":
    main()
