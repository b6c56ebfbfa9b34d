#!/usr/bin/env python3
"""Builds bench/traces/real/listening-NN.txt: session starts of real people, from the music-listening
exports (Spotify StreamingHistory*.json, Last.fm scrobble CSVs) they published in public GitHub
repositories, and bench/traces/real/sources-listening.tsv, which says where each trace came from.

Each source is pinned to one snapshot (repository and commit) and read with
`git --git-dir=DIR show COMMIT:PATH` from a mirror of that repository (default root /work/.mirror,
one DIR per repository at ROOT/OWNER+NAME/repo[/.git]). A source whose snapshot is absent or lacks
the recorded commit is skipped with a message; its trace file and its row in the TSV are kept.
CI never runs this script; it rebuilds the same traces wherever the snapshots are present.

Every play becomes a timezone-aware moment (the exports give UTC), put into the person's local time
by one rule per source, in this order of preference:
  data  - a country or offset recorded in the export itself;
  zone  - the time zone the repository or its owner states, applied with zoneinfo (DST moves it);
  fixed - a fixed offset the repository's own analysis applies to the same data;
  infer - last resort: a fixed whole-hour offset that puts the middle of the quietest 8 hours of
          all the export's plays (UTC) at 04:00 local.
Then bench/real_traces_common.build() folds plays less than 30 minutes apart into sessions and keeps
the densest 90-day window. Traces are named by kind and number, never by person. Before anything is
written, every pair of traces (built now, or kept from an earlier run for a skipped source) is
checked for a shared run of 5 consecutive session starts at the same instants, the mark of one
person's export published twice (a fork, a copy, a shared course dataset); any such pair stops the
run with nothing written.

Standard library only.  Usage: python3 bench/real_traces_listening.py [--mirror-root DIR]
"""
import argparse
import csv
import datetime as dt
import io
import json
import os
import statistics
import subprocess
import sys
import zoneinfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_traces_common as common  # noqa: E402

UTC = dt.timezone.utc
KIND = "listening"
TSV = os.path.join(common.REAL_DIR, "sources-listening.tsv")
HEADER = ["trace", "kind", "repository", "commit", "derivation", "sessions", "window", "utc_offsets"]

from real_traces_listening_sources import SOURCES  # noqa: E402


class Skip(Exception):
    pass


def git_dir(root, repo):
    gdir = common.snapshot_git_dir(root, repo)
    if gdir is None:
        raise Skip(f"no snapshot of {repo} under {root}")
    return gdir


def read(gdir, commit, path):
    has = subprocess.run(["git", "--git-dir", gdir, "cat-file", "-e", commit + "^{commit}"],
                         capture_output=True)
    if has.returncode != 0:
        raise Skip(f"snapshot {gdir} lacks commit {commit}")
    out = subprocess.run(["git", "--git-dir", gdir, "show", f"{commit}:{path}"], capture_output=True)
    if out.returncode != 0:
        raise Skip(f"{commit}:{path} unreadable: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout.decode("utf-8-sig")


def plays(fmt, text):
    """The UTC start moments of the plays in one export file."""
    if fmt == "spotify-streaminghistory":
        for item in json.loads(text):
            if item["msPlayed"] <= 0:
                continue
            end = dt.datetime.strptime(item["endTime"], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            yield end - dt.timedelta(seconds=item["msPlayed"] // 1000)
    elif fmt == "lastfm-uts-csv":
        for row in csv.DictReader(io.StringIO(text)):
            yield dt.datetime.fromtimestamp(int(row["uts"]), UTC)
    elif fmt == "lastfmr-csv":
        for row in csv.DictReader(io.StringIO(text)):
            if row["date"] in ("", "NA"):
                continue
            yield dt.datetime.strptime(row["date"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    else:
        raise ValueError(fmt)


def inferred_offset(moments):
    """Whole-hour offset putting the middle of the quietest 8 UTC hours (circular, earliest on
    ties) at 04:00 local; returns (minutes, text saying which hours)."""
    per_hour = [0] * 24
    for m in moments:
        per_hour[m.hour] += 1
    load = [sum(per_hour[(start + k) % 24] for k in range(8)) for start in range(24)]
    start = load.index(min(load))
    middle = (start + 4) % 24
    hours = (4 - middle + 12) % 24 - 12
    if hours == -12:
        hours = 12
    why = (f"quietest 8 h of all plays {start:02d}:00-{(start + 8) % 24:02d}:00 UTC, "
           f"middle {middle:02d}:00 UTC put at 04:00 local")
    return hours * 60, why


def offset_text(minutes):
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def build_source(source, root):
    gdir = git_dir(root, source["repo"])
    moments = []
    for path in source["paths"]:
        moments.extend(plays(source["format"], read(gdir, source["commit"], path)))
    kind, value, why = source["tz"]
    if kind == "zone":
        zone = zoneinfo.ZoneInfo(value)
        rule = f"zone {value} via zoneinfo ({why})"
    elif kind == "fixed":
        zone = dt.timezone(dt.timedelta(minutes=value))
        rule = f"fixed {offset_text(value)} ({why})"
    else:
        minutes, how = inferred_offset(moments)
        zone = dt.timezone(dt.timedelta(minutes=minutes))
        rule = f"inferred fixed {offset_text(minutes)}, last resort ({why}; {how})"
    local = [m.astimezone(zone) for m in moments]
    sessions = common.build(local)
    derivation = (f"{', '.join(source['paths'])}; format {source['format']} "
                  f"({len(moments)} plays, UTC); time zone: {rule}; "
                  f"folded at {common.SESSION_GAP_SECONDS // 60} min; "
                  f"densest {common.WINDOW_DAYS} days")
    return sessions, derivation


def read_tsv():
    rows = {}
    if os.path.exists(TSV):
        with open(TSV, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                rows[row["trace"]] = row
    return rows


def write_tsv(rows):
    order = [s["trace"] for s in SOURCES]
    with open(TSV, "w", newline="") as f:
        out = csv.writer(f, delimiter="\t", lineterminator="\n")
        out.writerow(HEADER)
        for trace in order:
            if trace in rows:
                out.writerow([rows[trace][h] for h in HEADER])


def summary(name, sessions):
    weekday = sum(1 for s in sessions if s.weekday() < 5) / len(sessions)
    hour = statistics.median(s.hour + s.minute / 60 for s in sessions)
    return (f"{name:14s} {len(sessions):8d}  {','.join(common.offsets(sessions)):14s} "
            f"{weekday:8.2f} {hour:12.1f}")


SHARED_RUN = 5


def read_trace(name):
    """The session starts of an already written trace, or None if it has no file."""
    path = os.path.join(common.REAL_DIR, name + ".txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [dt.datetime.fromisoformat(line.strip()) for line in f if line.strip()]


def shared_runs(traces, run=SHARED_RUN):
    """Pairs of traces holding the same `run` consecutive session starts (the same instants), as
    (first, second, the first shared start): two people do not; a copy of one export does."""
    seen, clashes = {}, []
    for name, sessions in traces.items():
        stamps = [int(s.timestamp()) for s in sessions]
        mine = set()
        for i in range(len(stamps) - run + 1):
            key = tuple(stamps[i:i + run])
            if key in mine:
                continue
            mine.add(key)
            other = seen.get(key)
            if other is not None and other != name:
                clashes.append((other, name, sessions[i]))
            else:
                seen[key] = name
    found = {}
    for first, second, start in clashes:
        found.setdefault((first, second), start)
    return [(a, b, start) for (a, b), start in found.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror-root", default="/work/.mirror",
                        help="directory holding OWNER+NAME/repo[/.git] snapshots (default %(default)s)")
    args = parser.parse_args()
    rows = read_tsv()
    built, traces, skipped = {}, {}, 0
    for source in SOURCES:
        try:
            built[source["trace"]] = build_source(source, args.mirror_root)
            traces[source["trace"]] = built[source["trace"]][0]
        except Skip as why:
            print(f"{source['trace']}: skipped {source['repo']}: {why}", file=sys.stderr)
            skipped += 1
            kept = read_trace(source["trace"])
            if kept:
                traces[source["trace"]] = kept
    clashes = shared_runs(traces)
    for first, second, start in clashes:
        print(f"{first} and {second} share {SHARED_RUN} consecutive session starts from "
              f"{common.iso(start)}: one person's data twice", file=sys.stderr)
    if clashes:
        sys.exit("nothing written")
    table = []
    for source in SOURCES:
        if source["trace"] not in built:
            continue
        sessions, derivation = built[source["trace"]]
        common.write_trace(source["trace"], sessions)
        rows[source["trace"]] = dict(
            trace=source["trace"], kind=KIND, repository=source["repo"], commit=source["commit"],
            derivation=derivation, sessions=str(len(sessions)),
            window=f"{sessions[0].date().isoformat()}..{sessions[-1].date().isoformat()}",
            utc_offsets=",".join(common.offsets(sessions)))
        table.append(summary(source["trace"], sessions))
    write_tsv(rows)
    print(f"{'trace':14s} {'sessions':>8s}  {'offsets':14s} {'weekdays':>8s} {'median hour':>12s}")
    print("\n".join(table))
    if skipped:
        print(f"{skipped} source(s) skipped; their earlier traces and rows are kept", file=sys.stderr)


if __name__ == "__main__":
    main()
