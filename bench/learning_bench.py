#!/usr/bin/env python3
"""make bench-learning: the daemon's planner on real and synthetic usage traces, scored as the
held-out judge scores it, beside the fixed interval and the anchors of learning_anchors.py
(hindsight, online, held-out half) computed in the same run.

usage: learning_bench.py BIN_DIR [--json OUT] [--policy NAME ...] [--check] [--budget N]
                         [--set tuning|validation|synthetic|adversarial ...] [--only TEXT]

Traces: bench/traces/real/*.txt (real people, see its sources-*.tsv), reported by the set
bench/traces/real/split.tsv puts them in (tuning, validation: bench/learning_split.py) and by
kind of source (commits, listening); ../shared/traces/*.txt (synthetic habits) when that folder
is there; Tests/FetchdPlannerTests/Traces/adversarial-*.txt (bench/adversarial_traces.py).
--set runs those sets only (tuning alone while choosing a constant). Each policy is `fetchctl
simulate --policy NAME` (the daemon's own code); the first is the daemon's default. --check also
runs the judge's script (../shared/scoring/staleness.py) on every schedule of the planner and of
the hindsight and online anchors, and fails on any difference (the held-out half's schedule
covers half a trace, so it has no trace file for the judge; the same scorer scores it).
"""
import argparse, datetime as dt, glob, json, math, os, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learning_anchors as anchors  # noqa: E402
import learning_score as scoring  # noqa: E402
import learning_split as split  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "traces", "real")
SHARED = os.path.join(HERE, "..", "..", "shared")
JUDGE = os.path.join(SHARED, "scoring", "staleness.py")
# People a learned schedule can serve worse than an interval (bench/adversarial_traces.py).
ADVERSARIAL = os.path.join(HERE, "..", "Tests", "FetchdPlannerTests", "Traces")


def traces():
    """(group, name, path): the real corpus first (group: its set in the split), then the
    synthetic and the adversarial traces."""
    sets = split.read()
    found = []
    for path in sorted(glob.glob(os.path.join(REAL, "*.txt"))):
        name = os.path.basename(path)[:-4]
        if name not in sets:
            raise SystemExit(f"{name} is not in {split.OUT}: run python3 bench/learning_split.py")
        found.append((sets[name], name, path))
    found += [("synthetic", os.path.basename(p)[:-4], p) for p in sorted(glob.glob(os.path.join(SHARED, "traces", "*.txt")))]
    found += [("adversarial", os.path.basename(p)[:-4], p)
              for p in sorted(glob.glob(os.path.join(ADVERSARIAL, "adversarial-*.txt")))]
    return found


def simulate(fetchctl, trace, policy, budget, folder):
    """The planner's fetch times for `trace` and its report (planning time)."""
    emitted = os.path.join(folder, f"{os.path.basename(trace)}.{policy or 'default'}.fetches")
    command = [fetchctl, "simulate", "--usage", trace, "--budget", f"{budget}/day", "--emit-fetches", emitted, "--json"]
    if policy:
        command += ["--policy", policy]
    report = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    return scoring.read_times(emitted), report, emitted


def judge(trace, fetch_file):
    """The held-out judge's own script on one schedule."""
    return json.loads(subprocess.run([sys.executable, JUDGE, trace, fetch_file], capture_output=True, text=True,
                                     check=True).stdout)


def most_in_a_day(fetches):
    """The most fetches in any 24 hours (a window starting at each fetch)."""
    most, low = 0, 0
    for high in range(len(fetches)):
        while fetches[high] - fetches[low] >= scoring.DAY_SECONDS:
            low += 1
        most = max(most, high - low + 1)
    return most


def figures(result):
    """The figures the tables and the JSON keep of one scored schedule."""
    return {"gain": result["fresh_gain"], "median_ratio": result["median_ratio"], "p90_ratio": scoring.p90_ratio(result),
            "fresh": result["adaptive"]["fresh15"], "median_min": result["adaptive"]["median_min"],
            "p90_min": result["adaptive"]["p90_min"], "fetches_per_day": result["fetches_per_day"]}


def run_trace(fetchctl, group, name, path, policies, budget, folder, check):
    """One trace: each policy through fetchctl simulate, then the anchors, all scored alike."""
    uses = anchors.read_uses(path)
    times = [t for t, _ in uses]
    row = {"group": group, "trace": name, "uses": len(uses), "policies": {}}
    for policy in policies:
        fetches, report, emitted = simulate(fetchctl, path, policy, budget, folder)
        result = scoring.score(times, fetches)
        if check:
            theirs = judge(path, emitted)
            if theirs != json.loads(json.dumps(result)):
                raise SystemExit(f"{name}: the bench's scorer and {JUDGE} disagree:\n{result}\n{theirs}")
        entry = figures(result)
        entry["most_in_24h"] = most_in_a_day(fetches)
        entry["planning_us"] = report["planningMicroseconds"]
        entry["learned_state_bytes"] = report["learnedStateBytes"]
        row["policies"][policy or "default"] = entry
    start, end = scoring.span(times)
    row["days"] = round((end - start) / scoring.DAY_SECONDS, 1)
    for anchor in ["online", "hindsight"]:
        fetches = getattr(anchors, anchor)(uses, budget)
        row[anchor] = figures(scoring.score(times, fetches))
        if check:
            # Written with microseconds, so the judge reads the very times scored here.
            anchor_file = os.path.join(folder, f"{name}.{anchor}.fetches")
            with open(anchor_file, "w") as out:
                out.write("".join(dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat() + "\n" for t in fetches))
            if judge(path, anchor_file) != json.loads(json.dumps(scoring.score(times, fetches))):
                raise SystemExit(f"{name}/{anchor}: the bench's scorer and {JUDGE} disagree")
    second, fetches = anchors.held_out_half(uses, budget)
    row["held_out_half"] = figures(scoring.score([t for t, _ in second], fetches))
    return row


def geomean(values):
    """The geometric mean (of ratios)."""
    values = [max(v, 1e-9) for v in values]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def kind(name):
    """The kind of source of a trace: commits or listening (real people), else synthetic."""
    return name.split("-")[0] if name.split("-")[0] in ("commits", "listening") else "synthetic"


def groups(rows):
    """(label, rows) to report: each set of the split and its kinds of source, then the
    synthetic and the adversarial traces."""
    out = []
    for group in ["tuning", "validation"]:
        members = [r for r in rows if r["group"] == group]
        if members:
            out.append((group, members))
            for k in sorted({kind(r["trace"]) for r in members}):
                out.append((f"{group}/{k}", [r for r in members if kind(r["trace"]) == k]))
    for group in ["synthetic", "adversarial"]:
        members = [r for r in rows if r["group"] == group]
        if members:
            out.append((group, members))
    return out


def summarize(members, names):
    """Geo-means (and worst cases) of each policy and anchor over `members`."""
    summary = {}
    for name in names + ["online", "hindsight", "held_out_half"]:
        entries = [r["policies"][name] if name in r["policies"] else r[name] for r in members]
        summary[name] = {
            "gain": geomean([e["gain"] for e in entries]),
            "worst_gain": min(e["gain"] for e in entries),
            "below_interval": sum(e["gain"] < 1 for e in entries),
            "median_ratio": geomean([e["median_ratio"] for e in entries]),
            "p90_ratio": geomean([e["p90_ratio"] for e in entries]),
            "worst_median_ratio": max(e["median_ratio"] for e in entries),
            # Plain means beside the ratios: a planner that fetches less where nobody
            # uses the content raises its gain with no more uses fresh, and this shows it.
            "mean_fresh": sum(e["fresh"] for e in entries) / len(entries),
            "mean_fetches_per_day": sum(e["fetches_per_day"] for e in entries) / len(entries)}
        if name in names:
            summary[name]["most_in_24h"] = max(e["most_in_24h"] for e in entries)
            summary[name]["learned_state_bytes"] = max(e["learned_state_bytes"] for e in entries)
    return summary


def year_trace(path, folder):
    """`path` repeated, each copy 13 weeks after the one before, to a year: planning cost with a
    year of history (the model keeps the last `memoryDays` of it)."""
    lines = [dt.datetime.fromisoformat(l.strip()) for l in open(path) if l.strip()]
    out = os.path.join(folder, "year.txt")
    with open(out, "w") as f:
        for copy in range(4):
            for moment in lines:
                f.write((moment + dt.timedelta(weeks=13 * copy)).isoformat() + "\n")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("--json")
    parser.add_argument("--policy", action="append", default=None)
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--only", help="trace names containing this")
    parser.add_argument("--set", choices=["tuning", "validation", "synthetic", "adversarial"], action="append",
                        help="only the traces of this set (repeatable)")
    args = parser.parse_args()
    fetchctl = os.path.join(args.bin_dir, "fetchctl")
    policies = args.policy or [None]
    if args.check and not os.path.exists(JUDGE):
        raise SystemExit(f"--check needs the judge's scorer at {JUDGE}")
    found = [t for t in traces() if (not args.only or args.only in t[1]) and (not args.set or t[0] in args.set)]
    if not found:
        raise SystemExit(f"no traces under {REAL}")
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        rows = list(pool.map(lambda t: run_trace(fetchctl, *t, policies, args.budget, folder, args.check), found))
        names = [p or "default" for p in policies]
        header = "| trace | set | uses | " + " | ".join(f"{n}: gain / median / p90 ratio (fresh)" for n in names)
        print(header + " | online | hindsight | held-out half |")
        print("|" + " --- |" * (6 + len(names)))
        for row in rows:
            cells = [f"{p['gain']:.2f}× / {p['median_ratio']:.2f} / {p['p90_ratio']:.2f} ({p['fresh']:.2f})"
                     for p in row["policies"].values()]
            for anchor in ["online", "hindsight", "held_out_half"]:
                a = row[anchor]
                cells.append(f"{a['gain']:.2f}× / {a['median_ratio']:.2f} / {a['p90_ratio']:.2f}")
            print(f"| {row['trace']} | {row['group']} | {row['uses']} | " + " | ".join(cells) + " |")
        summary = {}
        for group, members in groups(rows):
            summary[group] = summarize(members, names)
            print(f"\ngeo-mean over {len(members)} traces of {group}:")
            for name, s in summary[group].items():
                extra = (f", most fetches in 24 h {s['most_in_24h']}, learned state at most {s['learned_state_bytes']} bytes"
                         if "most_in_24h" in s else "")
                print(f"  {name:>11}: gain {s['gain']:.2f}× (worst {s['worst_gain']:.2f}, {s['below_interval']} below 1), "
                      f"median ratio {s['median_ratio']:.2f} (worst {s['worst_median_ratio']:.3f}), "
                      f"p90 ratio {s['p90_ratio']:.2f}, fresh {s['mean_fresh']:.3f} "
                      f"at {s['mean_fetches_per_day']:.2f} fetches a day" + extra)
        year = year_trace(max(found, key=lambda t: os.path.getsize(t[2]))[2], folder)
        planning = {}
        for policy in policies:
            _, report, _ = simulate(fetchctl, year, policy, args.budget, folder)
            planning[policy or "default"] = {"us_per_decision": report["planningMicroseconds"],
                                             "learned_state_bytes": report["learnedStateBytes"]}
            print(f"planning with a year of uses ({policy or 'default'}): {report['planningMicroseconds']:.0f} µs per decision, "
                  f"learned state at most {report['learnedStateBytes']} bytes")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"date": time.strftime("%Y-%m-%d"), "budget_per_day": args.budget, "traces": rows,
                       "geomean": summary, "planning_us_year": planning}, out, indent=1)


if __name__ == "__main__":
    main()
