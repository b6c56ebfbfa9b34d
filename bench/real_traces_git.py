#!/usr/bin/env python3
"""Builds bench/traces/real/commits-NN.txt: real people's session starts, from public git history.

Each trace is ONE person's commit times in ONE public repository. For each source below, the
script reads every commit's author time with its recorded UTC offset
(`git --git-dir=DIR log --no-merges --format=%aI%x09%an%x09%ae COMMIT`) from a fetched snapshot,
and then:

  1. drops merge commits (--no-merges) and commits authored by bots (BOT, matched against the
     author name and email: dependabot, renovate, github-actions, "[bot]" accounts, release bots);
  2. joins the remaining author identities into alias groups: two (name, email) identities are
     the same person when they share a normalised name (case, spaces, dots, dashes and
     underscores ignored), an email address, or a GitHub noreply login / user id (a noreply
     login also counts as a name: "jdoe" <...> joins "Jane Doe" <jdoe@users.noreply...>);
     generic names and host-local addresses (GENERIC_NAMES, is_generic_email) link nothing, nor
     does an identity seen on a single commit (a one-off pairing of one person's name with
     another's email would merge two people);
  3. chooses the alias group with the most commits (the rule "most"; no email is hard-coded);
  4. optionally keeps only the chosen person's commits inside a stated period (a source's
     `since`/`until`, ISO dates, used where part of the history records a converted offset or
     where the person lived elsewhere; the reason is written next to the source);
  5. folds the commit times into sessions (a commit less than 30 minutes after the previous one
     joins its session) and keeps the densest 90-day window (real_traces_common.build);
  6. writes the session starts, each with its own recorded offset (real_traces_common.write_trace),
     and the trace's row of bench/traces/real/sources-git.tsv.

Snapshots are the `fetch` tool's mirrors: MIRROR_ROOT/OWNER+NAME/repo (a bare git dir). A source
whose snapshot is absent, or lacks the recorded commit, is skipped with a message; its existing
trace file and TSV row are left as they are. Rerunning where the snapshots are present rebuilds
byte-identical files. CI never runs this script (it needs the snapshots); the traces are committed.

Usage: python3 bench/real_traces_git.py [--mirror-root /work/.mirror] [--only commits-03 ...]
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

# (trace, repository, snapshot commit, rule, since, until, why the period)
# rule "most": the alias group with the most non-merge, non-bot commits.
SOURCES = [
    # Europe
    ("commits-01", "curl/curl", "5c61e168698a72b87437d58ed728bcdea6d5db42", "most",
     "2010-03-20", None, "history before the move to git (2010-03-20) was converted from CVS and records every time at +00:00"),
    ("commits-02", "vim/vim", "b3526a91b82779c2d9e2f3ca330039143cc36862", "most", None, None, ""),
    ("commits-03", "ocornut/imgui", "46d39d56febc2a00bdd2270dc88c8a13f2a0441a", "most", None, None, ""),
    ("commits-04", "Genymobile/scrcpy", "2926c06c5dc3064ae6d8db706f1a98a37cfcf3f0", "most", None, None, ""),
    ("commits-05", "LuaJIT/LuaJIT", "1ee778a4e37122d8ca7d5733c590a47dafd6b15c", "most", None, None, ""),
    ("commits-06", "Textualize/rich", "42899d8a0a96b121a514516f4be9db44ff7aeaf3", "most", None, None, ""),
    ("commits-07", "ggerganov/whisper.cpp", "f0d2bfbfb77e01df6160f64d249bd43e75e11660", "most", None, None, ""),
    ("commits-08", "gohugoio/hugo", "7b5199fdeff7d7682e9f979f468d55bc7b67b934", "most", None, None, ""),
    ("commits-09", "nlohmann/json", "199dea11b17c533721b26249e2dcaee6ca1d51d3", "most", None, None, ""),
    ("commits-10", "odin-lang/Odin", "4247507dd5e31c9fd87166f53fd67b007ecca86c", "most", None, None, ""),
    ("commits-11", "redis/redis", "4f8cdc2a1ea53e42955af758aabffee67cb455dd", "most", None, None, ""),
    # The Americas
    ("commits-12", "BurntSushi/ripgrep", "3fce3b5bb0236da2df6d99672afb8a719642eca7", "most", None, None, ""),
    ("commits-13", "dtolnay/syn", "8011b1c512dbe87c6b09627790735ecdaa65c0db", "most", None, None, ""),
    ("commits-14", "jart/cosmopolitan", "eedf7d2db6e5ee0e228862690339c166a3f003a7", "most", None, None, ""),
    ("commits-15", "karpathy/llm.c", "f1e2ace651495b74ae22d45d1723443fd00ecd3a", "most", None, None, ""),
    ("commits-16", "lh3/minimap2", "e5066c79765f78fad9a288331f860d78670cc45f", "most", None, None, ""),
    ("commits-17", "yhirose/cpp-httplib", "6494edd8c03c55165825ae3078e2f55c595d8cb6", "most", None, None, ""),
    ("commits-18", "crystal-lang/crystal", "3fe7241e32f80692aa875fde52c631e70882e402", "most", None, None, ""),
    ("commits-19", "goreleaser/goreleaser", "cd616d2c080b205bfe0833396e6f2d208253095e", "most", None, None, ""),
    ("commits-20", "laravel/framework", "bd71b45fbb7e672957bf6ff61baddefe15fbca6a", "most", None, None, ""),
    ("commits-21", "ghostty-org/ghostty", "3b9c4e0ddbe953540243af89cf11fad26f297088", "most", None, None, ""),
    ("commits-22", "astral-sh/ruff", "fca5c7cf2cd2f8338f18b9485f936b8e9f07bd0b", "most", None, None, ""),
    # East Asia, India
    ("commits-23", "junegunn/fzf", "956562daaa82ddf55ea8f7aeab56883377b742c6", "most", None, None, ""),
    ("commits-24", "nghttp2/nghttp2", "692c8d8fce4f31ba2a9449b903877543043b0e3f", "most", None, None, ""),
    ("commits-25", "rui314/mold", "c2822be61af551140cce8d024b976563396a5847", "most", None, None, ""),
    ("commits-26", "LuaLS/lua-language-server", "7a73c7889c1ec981dfd76fba38f5096379f62f99", "most", None, None, ""),
    ("commits-27", "kovidgoyal/kitty", "9475a58f0bafc1d6efd62c76fad97ff8872b5878", "most", None, None, ""),
    # Australia, New Zealand
    ("commits-28", "jesseduffield/lazygit", "ea916395469808d37d726ae183fa40fd575a9d8a", "most", None, None, ""),
    ("commits-29", "micropython/micropython", "1c3c201149f37fe8d81246191b3127bb198d6306", "most",
     "2016-08-01", None, "the author's commits carry Australian offsets (+10:00/+11:00) from 2016-08 on; before, British ones"),
    ("commits-30", "nushell/nushell", "3e1172d43cabb34afb798dfc9d8724839e18fe85", "most", None, None, ""),
]

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


def find_git_dir(mirror_root, repository):
    base = os.path.join(mirror_root, repository.replace("/", "+"))
    for candidate in (os.path.join(base, "repo"), base):
        if os.path.isfile(os.path.join(candidate, "HEAD")) and os.path.isdir(os.path.join(candidate, "objects")):
            return candidate
    return None


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
        rows.append((dt.datetime.fromisoformat(when), name, email))
    return rows


def chosen_events(rows, rule, since, until):
    """The chosen person's commit times and the identities (name, email) matched for them."""
    rows = [r for r in rows if not BOT.search(r[1]) and not BOT.search(r[2])]
    per_identity = collections.Counter((name, email) for _, name, email in rows)
    if rule != "most":
        raise ValueError("unknown rule " + rule)
    groups = alias_groups(sorted(per_identity), per_identity)
    # Most commits; on a tie, the group holding the smallest identity (groups come in that order).
    group = max(groups, key=lambda g: sum(per_identity[i] for i in g))
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


def derivation(since, until, why):
    period = ""
    if since or until:
        period = (" commits " + (f"from {since} " if since else "") + (f"before {until} " if until else "")
                  + f"only ({why});")
    return ("author = alias group (identities of 2+ commits sharing a normalised name, an email or a"
            " GitHub login) with the most commits; merges and bot commits dropped;" + period +
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
    table, skipped = [], []
    for trace, repository, commit, rule, since, until, why in SOURCES:
        if args.only and trace not in args.only:
            continue
        git_dir = find_git_dir(args.mirror_root, repository)
        if git_dir is None:
            skipped.append(f"{trace}: skipped, no snapshot of {repository} under {args.mirror_root}")
            continue
        if git(git_dir, "cat-file", "-e", commit + "^{commit}").returncode != 0:
            skipped.append(f"{trace}: skipped, the snapshot of {repository} lacks commit {commit}")
            continue
        events, group, per_identity = chosen_events(read_commits(git_dir, commit), rule, since, until)
        sessions = common.build(events)
        try:
            common.write_trace(trace, sessions)
        except ValueError as error:
            skipped.append(f"{trace}: not written, {error}")
            continue
        weekday, office, median_hour = profile(sessions)
        offs = common.offsets(sessions)
        window = f"{sessions[0].date().isoformat()}..{sessions[-1].date().isoformat()}"
        tsv[trace] = [trace, kind_of(office), repository, commit, derivation(since, until, why),
                      str(len(sessions)), window, ",".join(offs)]
        table.append((trace, repository, len(sessions), window, ",".join(offs), weekday, office,
                      median_hour, kind_of(office)))
        if args.verbose:
            print(f"{trace} {repository}: {len(events)} commits of " +
                  "; ".join(f"{n} <{e}> x{per_identity[(n, e)]}" for n, e in group), file=sys.stderr)
    write_tsv(tsv)

    print(f"{'trace':11} {'repository':27} {'sessions':>8}  {'window':22} {'weekday':>7} {'office':>6} "
          f"{'median':>6}  {'kind':10} offsets")
    for trace, repository, n, window, offs, weekday, office, median_hour, kind in table:
        print(f"{trace:11} {repository:27} {n:8d}  {window:22} {weekday:7.0%} {office:6.0%} "
              f"{hhmm(median_hour):>6}  {kind:10} {offs}")
    for line in skipped:
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()
