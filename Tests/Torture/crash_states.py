#!/usr/bin/env python3
"""Crash states (issue 26): what a power loss during a wake may leave on disk, and whether fetchd
copes with every one of them.

A wake of 10 http handlers (file:// URLs, so fetchd itself writes every byte of their snapshots)
runs once under Tests/Torture/fsrecord.c, which records each call that changes the cache or the
state folder, with its data, and each line fetchd logs. From that record this script generates
the states a power loss at any point could leave, under ext4 data=ordered as ALICE models it
(Pillai et al., OSDI 2014):
  - folder operations (create, mkdir, rmdir, symlink, unlink, rename) and truncations go through
    the journal, so what survives of them is a prefix, in the order they were made;
  - appends are not ordered with them (delayed allocation): of each file's appends a prefix
    survives, at least those made before a surviving rename of that file (ext4 flushes a file
    renamed over another first, auto_da_alloc);
  - overwrites inside a file are not ordered at all: any of them may survive, or not;
  - a completed fsync or fdatasync makes every earlier write of its file durable, and commits
    the journal (one for the whole file system) with everything in it; a completed syncfs makes
    everything before it durable;
  - a write survives whole or not at all (no torn sector), and the SQLite -shm index is not
    data (it is rebuilt from the WAL), so it is dropped.
For a crash after each call, every state is enumerated when the total stays under --cap, else
--cap states are drawn at random (the report says which). Each state is built in a scratch
folder from the files as they were before the wake plus the surviving calls, then checked:
  - each handler's `latest` is a complete version: `content` and `meta.json` present and
    belonging together (size, SHA-256, handler);
  - the database passes `PRAGMA integrity_check` (no half transaction);
  - every result fetchd had logged before the crash is in the database (nothing acknowledged lost);
  - on every --start-every'th state, `fetchd --once` starts on it and fetches all 10 again, and
    the checks above hold after it.
Exits 1 at the first violation, keeping the state's folder.

    python3 Tests/Torture/crash_states.py --bin-dir .build/debug --cap 20000 --start-every 50
"""
import argparse, hashlib, itertools, os, random, re, shutil, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torture_common import build_shim, torn_snapshots

RECORDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsrecord.c")
HANDLERS = [f"h{i}" for i in range(10)]
# Calls that go through the journal, in order: folder operations and truncations.
JOURNALED = {"C", "D", "X", "S", "U", "R", "T"}
ACK = re.compile(r"handler=(\S+) .*?result=(\S+)(?: .*?version=(\S+))?")


def configure(root):
    """Ten http handlers on files outside the folders that get copied; returns the base folder."""
    base = f"{root}/base"
    os.makedirs(f"{base}/etc/handlers.d")
    os.makedirs(f"{root}/src")
    open(f"{base}/etc/fetchd.toml", "w").close()
    with open(f"{base}/etc/handlers.d/crash.toml", "w") as f:
        for name in HANDLERS:
            f.write(f'[[handler]]\nname = "{name}"\nkind = "http"\nurl = "file://{root}/src/{name}"\nallow_file_urls = true\n\n')
    return base


def wake(bin_dir, root, work, env=None):
    """`fetchd --once` on `work`, every source changed first so every handler has new data."""
    for name in HANDLERS:
        with open(f"{root}/src/{name}", "wb") as f:
            f.write(os.urandom(random.randint(1, 3000)))
    return subprocess.run([f"{bin_dir}/fetchd", "--once", "--config", f"{work}/etc/fetchd.toml", "--cache-dir",
                           f"{work}/cache", "--state-dir", f"{work}/state", "--runtime-dir", f"{work}/run"],
                          capture_output=True, text=True, env=dict(os.environ, SWIFT_BACKTRACE="enable=no", **(env or {})),
                          timeout=120)


def read_record(path, work, before):
    """The recorded calls as tuples, paths made relative to `work`; each write says whether it
    appended (went past the file's end as the files before the wake and the calls before it
    left it) or overwrote."""
    calls, sizes = [], {}
    size = lambda p: sizes[p] if p in sizes else (os.path.getsize(f"{before}/{p}") if os.path.isfile(f"{before}/{p}") else 0)
    for line in open(path).read().splitlines():
        fields = line.split("\t")
        kind, rest = fields[0], [f.replace(work + "/", "") if f.startswith(work) else f for f in fields[1:]]
        if any(part.endswith("-shm") for part in rest):
            continue  # the WAL index: not data, rebuilt from the WAL
        if kind == "W":
            path, offset, data = rest[0], int(rest[1]), bytes.fromhex(rest[2])
            append = offset + len(data) > size(path)
            sizes[path] = max(size(path), offset + len(data))
            calls.append(("A" if append else "O", path, offset, data))
        elif kind == "T":
            sizes[rest[0]] = int(rest[1])
            calls.append(("T", rest[0], int(rest[1])))
        elif kind == "C":
            sizes[rest[0]] = 0
            calls.append(("C", rest[0]))
        elif kind == "R":
            sizes[rest[1]] = size(rest[0])
            sizes.pop(rest[0], None)
            calls.append(("R", rest[0], rest[1]))
        elif kind == "A":
            calls.append(("ack", bytes.fromhex(rest[0]).decode(errors="replace")))
        else:
            calls.append((kind, *rest))
    return calls


def forced(calls, crash):
    """The calls up to `crash` (inclusive) that a completed sync made durable: a syncfs, every
    call before it; an fsync or fdatasync, the writes of its file before it and (ext4 has one
    journal, and a sync commits it) every journaled call before it."""
    durable, last_syncfs = set(), -1
    for index in range(crash + 1):
        call = calls[index]
        if call[0] == "Y":
            last_syncfs = index
        elif call[0] == "F":
            durable.update(i for i in range(index) if calls[i][0] in JOURNALED
                           or (calls[i][0] in ("A", "O") and calls[i][1] == call[1]))
    durable.update(i for i in range(last_syncfs + 1) if calls[i][0] not in ("Y", "F", "ack"))
    return durable


class Plan:
    """What may survive a crash after call `crash`: a prefix of the journaled calls (at least the
    synced ones), a prefix of each file's appends, any of the overwrites; and what syncs forced."""

    def __init__(self, calls, crash):
        self.calls, self.crash = calls, crash
        self.durable = forced(calls, crash)
        self.journal = [i for i in range(crash + 1) if calls[i][0] in JOURNALED]
        self.shortest = max([self.journal.index(i) + 1 for i in self.durable if i in self.journal] or [0])
        self.appends = {}
        for i in range(crash + 1):
            if calls[i][0] == "A":
                self.appends.setdefault(calls[i][1], []).append(i)
        self.loose = [i for i in range(crash + 1) if calls[i][0] == "O" and i not in self.durable]
        self.synced = {i for i in self.durable if calls[i][0] == "O"}

    def append_choices(self, length):
        """With the first `length` journaled calls surviving: each file's appends, and how many of
        them at least survive (the synced ones, and those before a surviving rename of the file:
        ext4 flushes a file renamed over another first, auto_da_alloc)."""
        renamed = {}
        for i in self.journal[:length]:
            if self.calls[i][0] == "R":
                renamed[self.calls[i][1]] = max(renamed.get(self.calls[i][1], -1), i)
        choices = []
        for path, indices in self.appends.items():
            least = 0
            for position, i in enumerate(indices):
                if i in self.durable or i < renamed.get(path, -1):
                    least = position + 1
            choices.append((indices, least))
        return choices

    def count(self):
        total = 0
        for length in range(self.shortest, len(self.journal) + 1):
            product = 1
            for indices, least in self.append_choices(length):
                product *= len(indices) - least + 1
            total += product
        return total * 2 ** len(self.loose)

    def every(self):
        for length in range(self.shortest, len(self.journal) + 1):
            choices = self.append_choices(length)
            for kept in itertools.product(*[range(least, len(indices) + 1) for indices, least in choices]):
                appended = {i for (indices, _), n in zip(choices, kept) for i in indices[:n]}
                for count in range(len(self.loose) + 1):
                    for subset in itertools.combinations(self.loose, count):
                        yield frozenset(set(self.journal[:length]) | appended | self.synced | set(subset))

    def draw(self, rng):
        length = rng.randint(self.shortest, len(self.journal))
        appended = {i for indices, least in self.append_choices(length)
                    for i in indices[:rng.randint(least, len(indices))]}
        return frozenset(set(self.journal[:length]) | appended | self.synced | {i for i in self.loose if rng.random() < 0.5})


def states(calls, cap, rng):
    """(crash point, surviving call indices) pairs: all when they number at most `cap`, else
    `cap` drawn at random. Returns them, whether they are all, and how many there are."""
    plans = [Plan(calls, crash) for crash in range(-1, len(calls))]
    total = sum(plan.count() for plan in plans)
    if total <= cap:
        chosen = {(plan.crash, surviving) for plan in plans for surviving in plan.every()}
        return sorted(chosen, key=lambda s: (s[0], sorted(s[1]))), True, total
    chosen = set()
    while len(chosen) < cap:
        plan = rng.choice(plans)
        chosen.add((plan.crash, plan.draw(rng)))
    return sorted(chosen, key=lambda s: (s[0], sorted(s[1]))), False, total


def tree(root):
    """Every file's bytes and every link's target under `root` (the -shm index left out)."""
    found = {}
    for folder, names, files in os.walk(root):
        for name in names + files:
            path = os.path.join(folder, name)
            key = os.path.relpath(path, root)
            if name.endswith("-shm"):
                continue
            if os.path.islink(path):
                found[key] = ("link", os.readlink(path))
            elif os.path.isfile(path):
                found[key] = ("file", hashlib.sha256(open(path, "rb").read()).hexdigest())
            else:
                found[key] = ("folder",)
    return found


def build(before, calls, surviving, target):
    """`before` with the surviving calls replayed, in `target`."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(before, target, symlinks=True)
    at = lambda path: os.path.join(target, path)
    for index in sorted(surviving):
        call = calls[index]
        if call[0] in ("Y", "F", "ack"):
            continue  # syncs and log lines change no file
        kind, path = call[0], at(call[2] if call[0] == "S" else call[1])
        if not os.path.isdir(os.path.dirname(path)):
            continue  # its folder did not survive (a later call in another order cannot need it)
        if kind == "C" and not os.path.lexists(path):
            open(path, "wb").close()
        elif kind in ("A", "O") and os.path.isfile(path):
            with open(path, "r+b") as f:
                f.seek(call[2])
                f.write(call[3])
        elif kind == "T" and os.path.isfile(path):
            os.truncate(path, call[2])
        elif kind == "D" and not os.path.exists(path):
            os.mkdir(path)
        elif kind == "X" and os.path.isdir(path):
            shutil.rmtree(path)
        elif kind == "U" and os.path.lexists(path):
            os.unlink(path)
        elif kind == "S":
            if os.path.lexists(path):
                os.unlink(path)
            os.symlink(call[1], path)
        elif kind == "R" and os.path.lexists(path) and os.path.isdir(os.path.dirname(at(call[2]))):
            os.replace(path, at(call[2]))
    for shm in [f"{target}/state/state.sqlite-shm"]:
        if os.path.exists(shm):
            os.unlink(shm)


def check(work, acknowledged):
    """What is wrong with the state in `work`, as sentences."""
    found = torn_snapshots(f"{work}/cache", HANDLERS)
    try:
        db = sqlite3.connect(f"{work}/state/state.sqlite")
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            found.append(f"integrity_check: {integrity}")
        for handler, result, version in acknowledged:
            row = db.execute("SELECT count(*) FROM fetch_history WHERE handler = ? AND result = ? AND "
                             "(version = ? OR ? IS NULL)", (handler, result, version, version)).fetchone()[0]
            if row == 0:
                found.append(f"{handler}: {result} {version or ''} was logged, and is not in the database")
        db.close()
    except sqlite3.DatabaseError as error:
        found.append(f"the database does not open: {error}")
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--cap", type=int, default=20000, help="enumerate up to this many states, else sample as many")
    parser.add_argument("--start-every", type=int, default=50, help="start fetchd on every Nth state")
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="fetchd-crash-states-")
    base = configure(root)
    first = wake(args.bin_dir, root, base)
    if first.returncode != 0:
        sys.exit(f"the first wake failed: {first.stderr[-2000:]}")
    before, work = f"{root}/before", f"{root}/recorded"
    shutil.copytree(base, before, symlinks=True)
    recorder = build_shim(RECORDER, root)
    # The harness checks itself: every call replayed must give the files the wake left, or the
    # recorder missed a call and the states built from it would be wrong (a call made while the
    # process is already exiting would be one: fetchd closes its database before it exits).
    shutil.copytree(base, work, symlinks=True)
    recorded = wake(args.bin_dir, root, work, {"LD_PRELOAD": recorder, "FSRECORD_LOG": f"{root}/record.log",
                                               "FSRECORD_PREFIXES": f"{work}/cache:{work}/state"})
    if recorded.returncode != 0:
        sys.exit(f"the recorded wake failed: {recorded.stderr[-2000:]}")
    calls = read_record(f"{root}/record.log", work, before)
    build(before, calls, range(len(calls)), f"{root}/replayed")
    differing = []
    for part in ("cache", "state"):
        replayed, left = tree(f"{root}/replayed/{part}"), tree(f"{work}/{part}")
        differing += sorted(k for k in set(replayed) | set(left) if replayed.get(k) != left.get(k))
    if differing:
        sys.exit(f"the replay of the whole record does not give the files the wake left: {differing[:10]} "
                 f"(a call the recorder did not see; record: {root}/record.log)")
    acks = [(i, ACK.search(c[1])) for i, c in enumerate(calls) if c[0] == "ack"]
    acks = [(i, m.groups()) for i, m in acks if m]
    if len(acks) != len(HANDLERS):
        sys.exit(f"expected {len(HANDLERS)} logged results in the record, found {len(acks)}")
    counts = {}
    for call in calls:
        counts[call[0]] = counts.get(call[0], 0) + 1
    generated, exhaustive, total = states(calls, args.cap, rng)
    print(f"{len(calls)} recorded calls ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); "
          f"{total} crash states under ext4 data=ordered; checking "
          f"{'all' if exhaustive else 'a random sample of'} {len(generated)}")
    scratch, started = f"{root}/state", 0
    for number, (crash, surviving) in enumerate(generated):
        build(before, calls, surviving, scratch)
        acknowledged = [groups for index, groups in acks if index <= crash]
        problems = check(scratch, acknowledged)
        if not problems and number % args.start_every == 0:
            again = wake(args.bin_dir, root, scratch)
            started += 1
            logged = [m.groups() for m in map(ACK.search, again.stderr.splitlines()) if m]
            if again.returncode != 0 or sorted(h for h, r, _ in logged if r == "newData") != HANDLERS:
                problems.append(f"fetchd on this state: exit {again.returncode}, results {logged}: {again.stderr[-1500:]}")
            problems += [f"after fetchd ran on it: {p}" for p in check(scratch, logged)]
        if problems:
            print(f"VIOLATION in state {number} (crash after call {crash}, {len(surviving)} calls survived):")
            for problem in problems:
                print(f"  {problem}")
            print(f"  folder kept: {scratch}; record: {root}/record.log")
            sys.exit(1)
    print(f"crash states: {len(generated)} checked ({'every one' if exhaustive else f'sampled from {total}'}), "
          f"fetchd started on {started}, 0 violations")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
