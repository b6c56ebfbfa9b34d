#!/usr/bin/env python3
"""Crash states (issue 26): what a power loss during a wake may leave on disk, and whether fetchd
copes with every one of them.

A wake of 10 http handlers (file:// URLs, so fetchd itself writes every byte of their snapshots)
runs once under Tests/Torture/fsrecord.c, which records each call that changes the cache or the
state folder, with its data, and each line fetchd logs. From that record this script generates
the states a power loss at any point could leave, under ext4 data=ordered as ALICE models it
(Pillai et al., OSDI 2014):
  - directory operations (create, mkdir, rmdir, symlink, unlink, rename), truncations and appends
    (a write past the end: its data is written before the journal commit that grows the file)
    go through the journal, so what survives of them is a prefix, in the order they were made;
  - overwrites inside a file are not ordered: any of them may survive, or not;
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
import argparse, itertools, os, random, re, shutil, sqlite3, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torture_common import build_shim, torn_snapshots

RECORDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsrecord.c")
HANDLERS = [f"h{i}" for i in range(10)]
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


def read_record(path, work):
    """The recorded calls as tuples, paths made relative to `work`; each write says whether it
    appended (went past the file's end as the calls before it left it)."""
    calls, sizes = [], {}
    for line in open(path).read().splitlines():
        fields = line.split("\t")
        kind, rest = fields[0], [f.replace(work + "/", "") if f.startswith(work) else f for f in fields[1:]]
        if any(part.endswith("-shm") for part in rest):
            continue  # the WAL index: not data, rebuilt from the WAL
        if kind == "W":
            path, offset, data = rest[0], int(rest[1]), bytes.fromhex(rest[2])
            append = offset + len(data) > sizes.get(path, 0)
            sizes[path] = max(sizes.get(path, 0), offset + len(data))
            calls.append(("A" if append else "O", path, offset, data))
        elif kind == "T":
            sizes[rest[0]] = int(rest[1])
            calls.append(("T", rest[0], int(rest[1])))
        elif kind == "C":
            sizes[rest[0]] = 0
            calls.append(("C", rest[0]))
        elif kind == "R":
            sizes[rest[1]] = sizes.pop(rest[0], 0)
            calls.append(("R", rest[0], rest[1]))
        elif kind == "A":
            calls.append(("ack", bytes.fromhex(rest[0]).decode(errors="replace")))
        else:
            calls.append((kind, *rest))
    return calls


def journaled(call):
    return call[0] in JOURNALED or call[0] == "A"


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
            durable.update(i for i in range(index)
                           if journaled(calls[i]) or (calls[i][0] == "O" and calls[i][1] == call[1]))
    durable.update(i for i in range(last_syncfs + 1) if calls[i][0] not in ("Y", "F", "ack"))
    return durable


def states(calls, cap, rng):
    """(crash point, surviving call indices) pairs: all when they number at most `cap`, else
    `cap` drawn at random. Returns them and whether they are all."""
    plans = []
    for crash in range(-1, len(calls)):
        durable = forced(calls, crash)
        journal = [i for i in range(crash + 1) if journaled(calls[i])]
        shortest = max([journal.index(i) + 1 for i in durable if i in journal] or [0])
        loose = [i for i in range(crash + 1) if calls[i][0] == "O" and i not in durable]
        base = {i for i in durable if not journaled(calls[i])}
        plans.append((crash, journal, shortest, loose, base))
    total = sum((len(j) - s + 1) * 2 ** len(loose) for _, j, s, loose, _ in plans)
    chosen = set()
    if total <= cap:
        for crash, journal, shortest, loose, base in plans:
            for length in range(shortest, len(journal) + 1):
                for count in range(len(loose) + 1):
                    for subset in itertools.combinations(loose, count):
                        chosen.add((crash, frozenset(base | set(journal[:length]) | set(subset))))
        return sorted(chosen, key=lambda s: (s[0], sorted(s[1]))), True, total
    while len(chosen) < cap:
        crash, journal, shortest, loose, base = rng.choice(plans)
        length = rng.randint(shortest, len(journal))
        subset = {i for i in loose if rng.random() < 0.5}
        chosen.add((crash, frozenset(base | set(journal[:length]) | subset)))
    return sorted(chosen, key=lambda s: (s[0], sorted(s[1]))), False, total


def build(before, calls, surviving, target):
    """`before` with the surviving calls replayed, in `target`."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(before, target, symlinks=True)
    at = lambda path: os.path.join(target, path)
    for index in sorted(surviving):
        call = calls[index]
        kind, path = call[0], at(call[1])
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
            target_path = at(call[2])
            if os.path.lexists(target_path):
                os.unlink(target_path)
            os.symlink(call[1], target_path)
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
    shutil.copytree(base, work, symlinks=True)
    recorder = build_shim(RECORDER, root)
    recorded = wake(args.bin_dir, root, work, {"LD_PRELOAD": recorder, "FSRECORD_LOG": f"{root}/record.log",
                                               "FSRECORD_PREFIXES": f"{work}/cache:{work}/state"})
    if recorded.returncode != 0:
        sys.exit(f"the recorded wake failed: {recorded.stderr[-2000:]}")
    calls = read_record(f"{root}/record.log", work)
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
