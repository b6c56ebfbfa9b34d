#!/usr/bin/env python3
"""Builds bench/traces/real/commits-NN.txt: real people's session starts, from public git history.

Each trace is ONE person's commit times in ONE public repository. For each source below, the
script reads every commit's author time with its recorded UTC offset
(`git --git-dir=DIR log --no-merges --format=%aI%x09%an%x09%ae COMMIT`) from a fetched snapshot,
and then:

  1. drops merge commits (--no-merges) and commits authored by bots (BOT, matched against the
     author name and email: dependabot, renovate, github-actions, "[bot]" accounts, release bots),
     and the rare commit whose recorded offset is malformed (git keeps what it was given, e.g.
     "+518:00"; the time of such a commit is unknown);
  2. joins the remaining author identities into alias groups: two (name, email) identities are
     the same person when they share a normalised name (case, spaces, dots, dashes and
     underscores ignored), an email address, or a GitHub noreply login / user id (a noreply
     login also counts as a name: "jdoe" <...> joins "Jane Doe" <jdoe@users.noreply...>);
     generic names and host-local addresses (GENERIC_NAMES, is_generic_email) link nothing, nor
     does an identity seen on a single commit (a one-off pairing of one person's name with
     another's email would merge two people);
  3. chooses an alias group by the source's rule (no email is hard-coded): "most", the group
     with the most commits, or "rank:K", the group with the K-th most commits ("rank:1" is
     "most"; groups of equal count keep the order "most" breaks ties by, the group holding the
     smallest identity first), so that one repository can give several people;
  4. optionally keeps only the chosen person's commits inside a stated period (a source's
     `since`/`until`, ISO dates, used where part of the history records a converted offset or
     where the person lived elsewhere; the reason is written next to the source);
  5. folds the commit times into sessions (a commit less than 30 minutes after the previous one
     joins its session) and keeps the densest 90-day window (real_traces_common.build);
  6. writes the session starts, each with its own recorded offset (real_traces_common.write_trace),
     and the trace's row of bench/traces/real/sources-git.tsv.

One person, one trace: after building, the script checks that no two traces built in the run share
an alias key (normalised name, email, GitHub login or user id, over all identities of the chosen
groups), so the same person chosen in two repositories is caught; it then writes nothing and exits
with status 1. Run it without --only to check the whole corpus.

Snapshots are the `fetch` tool's mirrors: MIRROR_ROOT/OWNER+NAME/repo (a bare git dir). A source
whose snapshot is absent, or lacks the recorded commit, is skipped with a message; its existing
trace file and TSV row are left as they are. Rerunning where the snapshots are present rebuilds
byte-identical files. CI never runs this script (it needs the snapshots); the traces are committed.

Usage: python3 bench/real_traces_git.py [--mirror-root /work/.mirror] [--only commits-03 ...] [--verbose]
"""
import argparse
import collections
import datetime as dt
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_traces_common as common  # noqa: E402

from real_traces_git_sources import SOURCES  # noqa: E402

BOT = re.compile(
    r"\[bot\]|\bbots?\b|dependabot|renovate|github[- ]actions|actions@github\.com|^actions-user$"
    r"|hugoreleaser|copilot|greenkeeper|web-flow|semantic-release",
    re.IGNORECASE)
GENERIC_NAMES = {"", "root", "user", "unknown", "admin", "ubuntu", "nobody", "none", "github",
                 "noreplygithubcom", "nonamegiven"}
LINK_LEAST = 2
NOREPLY = re.compile(r"^(?:(\d+)\+)?([^@]+)@users\.noreply\.github\.com$")
TSV_HEADER = ["trace", "kind", "repository", "commit", "derivation", "sessions", "window",
              "utc_offsets"]
TSV_PATH = os.path.join(common.REAL_DIR, "sources-git.tsv")


def norm_name(name):
    return re.sub(r"[\s._\-]+", "", name.casefold())


def is_generic_email(email):
    return ("@" not in email or email.endswith((".local", ".localdomain", "localhost", "(none)"))
            or email.split("@", 1)[0] in ("root", "nobody", "noreply", "none"))


def alias_keys(name, email):
    """The keys by which an identity joins others: its name, its email, its GitHub login/id."""
    email = email.casefold()
    keys = set()
    if norm_name(name) not in GENERIC_NAMES and len(norm_name(name)) >= 2:
        keys.add("name:" + norm_name(name))
    match = NOREPLY.match(email)
    if match:
        if match.group(1):
            keys.add("ghid:" + match.group(1))
        keys.add("name:" + norm_name(match.group(2)))
    elif not is_generic_email(email):
        keys.add("email:" + email)
    return keys


def alias_groups(identities, per_identity):
    """Union-find over identities (name, email) sharing any alias key; returns lists of identities.
    An identity seen on fewer than LINK_LEAST commits links nothing (it stays alone): one-off
    pairings of one person's name with another's email (co-authored or mis-attributed commits)
    would otherwise merge two people."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ident in identities:
        node = ("id",) + ident
        find(node)
        if per_identity[ident] < LINK_LEAST:
            continue
        for key in sorted(alias_keys(*ident)):
            a, b = find(node), find(("key", key))
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups = collections.defaultdict(list)
    for ident in identities:
        groups[find(("id",) + ident)].append(ident)
    return list(groups.values())


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir=" + git_dir, *args], capture_output=True, text=True, errors="replace")


def read_commits(git_dir, commit):
    """(author time with its recorded offset, name, email) of every non-merge commit reachable from commit."""
    out = git(git_dir, "log", "--no-merges", "--format=%aI%x09%an%x09%ae", commit)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    rows = []
    for line in out.stdout.splitlines():
        when, name, email = line.split("\t", 2)
        try:
            moment = dt.datetime.fromisoformat(when)
        except ValueError:  # a malformed recorded offset, e.g. +518:00: the time is unknown
            continue
        rows.append((moment, name, email))
    return rows


def rank_of(rule):
    """1 for "most", K for "rank:K"."""
    if rule == "most":
        return 1
    match = re.fullmatch(r"rank:([1-9]\d*)", rule)
    if not match:
        raise ValueError("unknown rule " + rule)
    return int(match.group(1))


def chosen_events(rows, rule, since, until):
    """The chosen person's commit times and the identities (name, email) matched for them."""
    rows = [r for r in rows if not BOT.search(r[1]) and not BOT.search(r[2])]
    per_identity = collections.Counter((name, email) for _, name, email in rows)
    rank = rank_of(rule)
    groups = alias_groups(sorted(per_identity), per_identity)
    # By commits, most first; on a tie, the group holding the smallest identity first (groups come
    # in that order and the sort is stable), as max() picks for "most".
    ranked = sorted(groups, key=lambda g: -sum(per_identity[i] for i in g))
    if rank > len(ranked):
        raise ValueError(f"rule {rule}: only {len(ranked)} alias groups")
    group = ranked[rank - 1]
    members = set(group)
    events = [when for when, name, email in rows if (name, email) in members
              and (since is None or when.date().isoformat() >= since)
              and (until is None or when.date().isoformat() < until)]
    return events, sorted(group, key=lambda i: -per_identity[i]), per_identity


def profile(sessions):
    weekday = sum(s.weekday() < 5 for s in sessions) / len(sessions)
    office = sum(s.weekday() < 5 and 9 <= s.hour < 18 for s in sessions) / len(sessions)
    median_hour = statistics.median(s.hour + s.minute / 60 for s in sessions)
    return weekday, office, median_hour


def kind_of(office):
    """work-like: most sessions start on weekdays 09:00-17:59 local; hobby-like: fewer than 40 %
    do (evenings, nights, weekends dominate); mixed otherwise."""
    if office >= 0.55:
        return "work-like"
    if office < 0.40:
        return "hobby-like"
    return "mixed"


def ordinal(k):
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def derivation(rule, since, until, why):
    period = ""
    if since or until:
        period = (" commits " + (f"from {since} " if since else "") + (f"before {until} " if until else "")
                  + f"only ({why});")
    which = "the most commits" if rule == "most" else f"the {ordinal(rank_of(rule))} most commits (rule {rule})"
    return ("author = alias group (identities of 2+ commits sharing a normalised name, an email or a"
            f" GitHub login) with {which}; merges and bot commits dropped;" + period +
            " author times (%aI, recorded offset) folded at 30 min; densest 90-day window")


def read_tsv():
    rows = {}
    if os.path.exists(TSV_PATH):
        with open(TSV_PATH) as f:
            lines = f.read().splitlines()
        for line in lines[1:]:
            fields = line.split("\t")
            rows[fields[0]] = fields
    return rows


def write_tsv(rows):
    with open(TSV_PATH, "w") as out:
        out.write("\t".join(TSV_HEADER) + "\n")
        for trace in sorted(rows):
            out.write("\t".join(rows[trace]) + "\n")


def hhmm(hours):
    minutes = round(hours * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror-root", default="/work/.mirror",
                        help="where the fetched snapshots live (OWNER+NAME/repo); default /work/.mirror")
    parser.add_argument("--only", nargs="*", help="build only these traces (e.g. commits-03)")
    parser.add_argument("--verbose", action="store_true", help="list the identities matched per trace")
    args = parser.parse_args()

    tsv = read_tsv()
    built, table, skipped = [], [], []
    for trace, repository, commit, rule, since, until, why in SOURCES:
        if args.only and trace not in args.only:
            continue
        git_dir = common.snapshot_git_dir(args.mirror_root, repository)
        if git_dir is None:
            skipped.append(f"{trace}: skipped, no snapshot of {repository} under {args.mirror_root}")
            continue
        if git(git_dir, "cat-file", "-e", commit + "^{commit}").returncode != 0:
            skipped.append(f"{trace}: skipped, the snapshot of {repository} lacks commit {commit}")
            continue
        events, group, per_identity = chosen_events(read_commits(git_dir, commit), rule, since, until)
        sessions = common.build(events)
        if len(sessions) < common.LEAST_SESSIONS:
            skipped.append(f"{trace}: not written, {trace}: {len(sessions)} sessions, fewer than "
                           f"{common.LEAST_SESSIONS}")
            continue
        built.append((trace, repository, commit, rule, since, until, why, events, group, per_identity,
                      sessions))

    # One person, one trace: no alias key may be shared by the chosen groups of two traces.
    owner, clashes = {}, []
    for trace, repository, *_, group, _per, _sessions in built:
        for key in sorted(set().union(*(alias_keys(*ident) for ident in group))):
            if key in owner and owner[key][0] != trace:
                clashes.append(f"{trace} ({repository}) and {owner[key][0]} ({owner[key][1]}) share {key}")
            owner.setdefault(key, (trace, repository))
    if clashes:
        for line in clashes:
            print("same person twice: " + line, file=sys.stderr)
        print("nothing written", file=sys.stderr)
        sys.exit(1)

    for trace, repository, commit, rule, since, until, why, events, group, per_identity, sessions in built:
        common.write_trace(trace, sessions)
        weekday, office, median_hour = profile(sessions)
        offs = common.offsets(sessions)
        window = f"{sessions[0].date().isoformat()}..{sessions[-1].date().isoformat()}"
        tsv[trace] = [trace, kind_of(office), repository, commit, derivation(rule, since, until, why),
                      str(len(sessions)), window, ",".join(offs)]
        table.append((trace, repository, len(sessions), window, ",".join(offs), weekday, office,
                      median_hour, kind_of(office)))
        if args.verbose:
            print(f"{trace} {repository} ({rule}): {len(events)} commits of " +
                  "; ".join(f"{n} <{e}> x{per_identity[(n, e)]}" for n, e in group), file=sys.stderr)
    write_tsv(tsv)

    print(f"{'trace':11} {'repository':36} {'sessions':>8}  {'window':22} {'weekday':>7} {'office':>6} "
          f"{'median':>6}  {'kind':10} offsets")
    for trace, repository, n, window, offs, weekday, office, median_hour, kind in table:
        print(f"{trace:11} {repository:36} {n:8d}  {window:22} {weekday:7.0%} {office:6.0%} "
              f"{hhmm(median_hour):>6}  {kind:10} {offs}")
    for line in skipped:
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()
