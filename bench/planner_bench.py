#!/usr/bin/env python3
"""make bench-planner: the adaptive planner on the synthetic usage traces (fetchctl simulate).

For each trace: the adaptive planner, a fixed interval with the same number of fetches and the
oracle, at a budget of 12 fetches/day; then planning time per decision against history length
(the habit-office trace cut after 7, 14, 28 and 60 days).
"""
import json, os, subprocess, sys, tempfile

TRACES = os.path.join(os.path.dirname(__file__), "..", "Tests", "FetchdPlannerTests", "Traces")

def simulate(fetchctl, trace):
    out = subprocess.run([fetchctl, "simulate", "--usage", trace, "--budget", "12/day", "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)

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
