#!/usr/bin/python3
"""Draws a soak run's curves (Tests/Torture/soak_torture.py --json) so a person sees whether
they flatten: resident memory, descriptors, database + WAL and the rows' content, and the cache,
against real time, with the warm-up shaded and a line fitted to each curve after the first hour
(or after the warm-up, for a shorter run), its slope per hour in the legend.

Debian's Python with Debian's matplotlib (python3-matplotlib; `make soak` installs it):

    /usr/bin/python3 bench/soak_plot.py bench/results/soak-20261126.json bench/results/soak-20261126.svg
"""
import json, sys

import matplotlib
matplotlib.use("agg")  # no display; savefig writes SVG or PNG by the file name
import matplotlib.pyplot as plt

MIB = 1024 * 1024


def fit(points):
    """Least-squares line through (t, v) points: (slope per second, intercept)."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0
    return slope, mean_v - slope * mean_t


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: soak_plot.py SOAK.json OUT.svg|OUT.png")
    run = json.load(open(sys.argv[1]))
    samples = run["samples"]
    end = samples[-1]["t"]
    # After the first hour when the run is long enough to have one after it; else after the
    # warm-up the soak's own verdict skips (its first fifth).
    fitted_from = 3600 if end >= 5400 else end / 5
    panels = [
        ("resident memory (MiB)", [("RSS", lambda s: s["rss_kib"] / 1024, "MiB")]),
        ("descriptors", [("other than sockets", lambda s: s["other_fds"], "fds"),
                         ("sockets", lambda s: s["sockets"], "fds")]),
        ("state database (MiB)", [("database + WAL", lambda s: (s["db_bytes"] + s["wal_bytes"]) / MIB, "MiB"),
                                  ("rows' content", lambda s: s["payload_bytes"] / MIB, "MiB")]),
        ("cache (MiB)", [("snapshots", lambda s: s["cache_bytes"] / MIB, "MiB")]),
    ]
    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 11), sharex=True)
    minutes = [s["t"] / 60 for s in samples]
    for axis, (title, curves) in zip(axes, panels):
        for label, value, unit in curves:
            values = [value(s) for s in samples]
            line, = axis.plot(minutes, values, linewidth=1)
            points = [(s["t"], v) for s, v in zip(samples, values) if s["t"] >= fitted_from]
            if len(points) >= 3:
                slope, intercept = fit(points)
                per_hour = slope * 3600
                axis.plot([fitted_from / 60, end / 60], [intercept + slope * fitted_from, intercept + slope * end],
                          linestyle="--", linewidth=1, color=line.get_color())
                label = f"{label}: {per_hour:+.2f} {unit}/h fitted after {fitted_from / 60:.0f} min"
            line.set_label(label)
        axis.axvspan(0, fitted_from / 60, color="0.92")
        axis.set_ylabel(title)
        axis.legend(loc="lower right", fontsize=8)
        axis.grid(True, linewidth=0.3)
    axes[-1].set_xlabel("minutes of real time")
    figure.suptitle(f"fetchd soak {run['date']}: {run['handlers']} handlers, {run['minutes']:g} min, "
                    f"a day's schedule every {1440 / run['speedup']:.0f} min, {run['fetches']} fetches", fontsize=10)
    figure.tight_layout()
    figure.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
