"""Shared steps of the real-usage trace builders (bench/real_traces_git.py, bench/real_traces_listening.py).

A trace is the session starts of one person: events (timezone-aware datetimes) folded into
sessions (an event closer than 30 minutes to the previous event joins its session), cut to the
densest 90-day window, written one ISO-8601 timestamp with its UTC offset per line.
"""
import datetime as dt
import os

SESSION_GAP_SECONDS = 30 * 60
WINDOW_DAYS = 90
LEAST_SESSIONS = 100
REAL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traces", "real")


def snapshot_git_dir(mirror_root, repository):
    """The git directory of `fetch`'s snapshot of repository (OWNER/NAME) under mirror_root
    (OWNER+NAME/repo, a bare one or a work tree's .git), or None when there is none."""
    base = os.path.join(mirror_root, repository.replace("/", "+"))
    for candidate in (os.path.join(base, "repo", ".git"), os.path.join(base, "repo"), base):
        if os.path.isfile(os.path.join(candidate, "HEAD")) and os.path.isdir(os.path.join(candidate, "objects")):
            return candidate
    return None


def fold(events):
    """Session starts of `events` (aware datetimes, any order): an event within 30 minutes of the
    previous event (not of the session's start) belongs to the same session."""
    events = sorted(events, key=lambda e: e.timestamp())
    sessions, previous = [], None
    for event in events:
        if previous is None or event.timestamp() - previous.timestamp() >= SESSION_GAP_SECONDS:
            sessions.append(event)
        previous = event
    return sessions


def densest_window(sessions, days=WINDOW_DAYS):
    """The `days`-long run of `sessions` (sorted) holding the most of them; the earliest on ties."""
    span = days * 86400
    best, low = (0, 0, 0), 0
    for high in range(len(sessions)):
        while sessions[high].timestamp() - sessions[low].timestamp() >= span:
            low += 1
        if high - low + 1 > best[0]:
            best = (high - low + 1, low, high + 1)
    return sessions[best[1]:best[2]]


def iso(moment):
    """2026-03-02T09:02:48+08:00 (seconds, the moment's own offset)."""
    return moment.replace(microsecond=0).isoformat()


def write_trace(name, sessions):
    """Writes bench/traces/real/NAME.txt; refuses a trace under LEAST_SESSIONS sessions."""
    if len(sessions) < LEAST_SESSIONS:
        raise ValueError(f"{name}: {len(sessions)} sessions, fewer than {LEAST_SESSIONS}")
    os.makedirs(REAL_DIR, exist_ok=True)
    with open(os.path.join(REAL_DIR, name + ".txt"), "w") as out:
        out.write("".join(iso(s) + "\n" for s in sessions))
    return os.path.join(REAL_DIR, name + ".txt")


def build(events):
    """fold, then the densest window: the sessions of one trace."""
    return densest_window(fold(events))


def offsets(sessions):
    """The distinct UTC offsets, as text (+08:00), in order of first use."""
    seen = []
    for s in sessions:
        text = s.strftime("%z")
        text = text[:3] + ":" + text[3:]
        if text not in seen:
            seen.append(text)
    return seen
