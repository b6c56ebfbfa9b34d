#!/usr/bin/env python3
"""The learning corpus's split into a tuning set and a validation set, made once by a fixed seed.

usage: python3 bench/learning_split.py [--check]   (--check: fail if split.tsv is not what the rule gives)

Every constant, policy and prior of the usage planner is chosen on the tuning set only (the
population prior included: bench/population_prior.py reads this split); the validation set
says whether a change generalizes, and its figures are the ones bench/README.md quotes.

The rule, per trace of bench/traces/real:
  - the 40 people of the corpus before the split (commits-01..30, listening-01..10) are in the
    tuning set: the planner's constants were already chosen on them, so as validation they would
    flatter it;
  - every later trace goes by the SHA-256 of "SEED:NAME": validation when its first 8 bytes,
    read as a fraction of 2^64, fall below VALIDATION_SHARE, tuning otherwise. A trace's set
    depends on its name and the seed alone, so adding traces never moves one already split.

The result is written to bench/traces/real/split.tsv (trace, set, reason), which the learning
bench and the prior read; `make bench-learning` runs --check first.
"""
import glob, hashlib, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "traces", "real")
OUT = os.path.join(REAL, "split.tsv")
# The issue that asked for the split; any fixed number would do, chosen before any figure.
SEED = 38
VALIDATION_SHARE = 2 / 3
# The corpus the planner had been tuned on before the split.
BEFORE_SPLIT = re.compile(r"^(commits-(0[1-9]|[12][0-9]|30)|listening-(0[1-9]|10))$")


def assign(name):
    """(set, reason) of one trace."""
    if BEFORE_SPLIT.match(name):
        return "tuning", "in the corpus the planner was tuned on before the split"
    digest = hashlib.sha256(f"{SEED}:{name}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2 ** 64
    chosen = "validation" if fraction < VALIDATION_SHARE else "tuning"
    relation = "<" if chosen == "validation" else ">="
    return chosen, f"sha256(\"{SEED}:{name}\") = {fraction:.4f} of 2^64 ({relation} {VALIDATION_SHARE:.4f})"


def names():
    """Every real trace's name, sorted."""
    return sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(REAL, "*.txt")))


def read():
    """{trace: set} from split.tsv."""
    with open(OUT) as rows:
        return {fields[0]: fields[1] for fields in (line.rstrip("\n").split("\t") for line in rows.readlines()[1:])}


def text():
    rows = ["trace\tset\treason"] + ["\t".join((name,) + assign(name)) for name in names()]
    return "\n".join(rows) + "\n"


def main():
    expected = text()
    if "--check" in sys.argv:
        current = open(OUT).read() if os.path.exists(OUT) else ""
        if current != expected:
            raise SystemExit(f"{OUT} is stale: run python3 bench/learning_split.py")
        return
    with open(OUT, "w") as out:
        out.write(expected)
    sets = read()
    print(f"wrote {OUT}: " + ", ".join(f"{s} {sum(v == s for v in sets.values())}" for s in ("tuning", "validation")))


if __name__ == "__main__":
    main()
