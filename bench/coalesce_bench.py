#!/usr/bin/env python3
"""Shared wakes, measured (`make bench-coalesce`).

Twenty handlers for 14 days through the daemon's own wake rule (Eligibility) and usage
planning (OnlinePlanning, held to the daemon's by SimulatorParityTests): ten usage-planned from
real traces (ten validation traces of bench/traces/real, drawn with a fixed seed), ten on fixed
intervals (15 min to 12 h, phases from a fixed seed). The replay is
Tests/FetchdDaemonTests/CoalesceBenchTests.swift (`bench`), run twice in one process: with the
daemon's tolerance and without sharing. Fresh at use of the usage-planned handlers is scored by
the judge's script, ../shared/scoring/staleness.py (`adaptive.fresh15`: uses at most 15 minutes
after the latest fetch), on each handler's uses and fetches, and pooled over their uses.

usage: coalesce_bench.py BIN_DIR --json OUT.json [--draws N]
"""
import argparse, datetime, json, os, random, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REAL = os.path.join(HERE, "traces", "real")
JUDGE = os.path.join(ROOT, "..", "shared", "scoring", "staleness.py")
SEED = 43  # the number, fixed before any figure
GOAL_WAKES_PER_FETCH = 1 / 3
GOAL_LOSS = 0.02


def validation_traces(seed):
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(REAL, "split.tsv"))][1:]
    names = sorted(row[0] for row in rows if row[1] == "validation")
    return sorted(random.Random(seed).sample(names, 10))


def score(folder, name):
    out = subprocess.run([sys.executable, JUDGE, os.path.join(folder, f"uses-{name}.txt"),
                          os.path.join(folder, f"fetches-{name}.txt")], check=True, capture_output=True, text=True)
    judged = json.loads(out.stdout)
    return judged["uses"], judged["adaptive"]["fresh15"]


def run(label, folder, names):
    summary = json.load(open(os.path.join(folder, label, "summary.json")))
    per = {name: score(os.path.join(folder, label), name) for name in names}
    uses = sum(u for u, _ in per.values())
    fresh = sum(u * f for u, f in per.values()) / max(1, uses)
    days = summary["days"]
    return {
        "wakes_per_day": round(summary["wakes"] / days, 2),
        "fetches_per_day": round(summary["fetches"] / days, 2),
        "wakes_per_fetch": round(summary["wakes"] / max(1, summary["fetches"]), 4),
        "fresh_at_use": round(fresh, 4),
        "fresh_at_use_by_handler": {name: round(f, 4) for name, (_, f) in per.items()},
        "uses": uses,
        **{k: summary[k] for k in ("wakes", "fetches", "interval_fetches", "planned_fetches", "idle_timer_wakes",
                                   "planned_moved_earlier", "planned_mean_early_minutes", "planned_moved_later",
                                   "planned_mean_late_minutes", "sharing", "replay_seconds")},
    }


def replay(bin_dir, names):
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, FETCHD_BIN_DIR=bin_dir, FETCHD_COALESCE_OUT=folder,
                   FETCHD_COALESCE_TRACES=":".join(os.path.join(REAL, f"{n}.txt") for n in names))
        subprocess.run(["swift", "test", "--skip-build", "--filter", "CoalesceBenchTests/bench"], cwd=ROOT, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        return run("shared", folder, names), run("unshared", folder, names)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("--json", required=True)
    parser.add_argument("--draws", type=int, default=5, help="draws of ten traces (the first is the headline)")
    args = parser.parse_args()
    names = validation_traces(SEED)
    shared, unshared = replay(args.bin_dir, names)
    # Ten people's 14 days hold a few hundred uses: the same fleet on other draws of ten
    # validation traces says how far fresh at use moves by chance alone.
    others = []
    for seed in range(SEED + 1, SEED + args.draws):
        other_names = validation_traces(seed)
        s, u = replay(args.bin_dir, other_names)
        others.append({"seed": seed, "traces": other_names, "wakes_per_fetch": s["wakes_per_fetch"],
                       "fresh_at_use_loss": round(u["fresh_at_use"] - s["fresh_at_use"], 4), "uses": s["uses"]})
    result = {
        "date": datetime.date.today().isoformat(),
        "command": "make bench-coalesce",
        "traces": names,
        "intervals_minutes": [15, 30, 45, 60, 90, 120, 180, 240, 360, 720],
        "days": 14,
        "wakes_per_fetch": shared["wakes_per_fetch"],
        "fresh_at_use_loss": round(unshared["fresh_at_use"] - shared["fresh_at_use"], 4),
        "wakes_ratio": round(shared["wakes_per_day"] / unshared["wakes_per_day"], 4),
        "fetches_ratio": round(shared["fetches_per_day"] / unshared["fetches_per_day"], 4),
        "goal": {"wakes_per_fetch_max": round(GOAL_WAKES_PER_FETCH, 4), "fresh_at_use_loss_max": GOAL_LOSS},
        "shared": shared,
        "unshared": unshared,
        "other_draws": others,
    }
    result["goal"]["met"] = result["wakes_per_fetch"] <= GOAL_WAKES_PER_FETCH and result["fresh_at_use_loss"] <= GOAL_LOSS
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{'run':10} {'wakes/day':>10} {'fetches/day':>12} {'wakes/fetch':>12} {'fresh at use':>13}")
    for label, r in (("shared", shared), ("unshared", unshared)):
        print(f"{label:10} {r['wakes_per_day']:10.1f} {r['fetches_per_day']:12.1f} {r['wakes_per_fetch']:12.3f} {r['fresh_at_use']:13.3f}")
    for other in others:
        print(f"draw {other['seed']}: wakes_per_fetch {other['wakes_per_fetch']:.3f}, fresh_at_use_loss "
              f"{other['fresh_at_use_loss']:.4f} ({other['uses']} uses)")
    print(f"wakes_per_fetch {result['wakes_per_fetch']:.3f} (goal <= 0.333), fresh_at_use_loss "
          f"{result['fresh_at_use_loss']:.4f} (goal <= 0.02): {'met' if result['goal']['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
