#!/usr/bin/env bash
# Runs one `swift test` pass (the command is this script's arguments) and, when it fails, repeats
# its failures at the very end of the output. Why: CI keeps only the tail of a run's output, and a
# failed expectation is printed where it happens, long before the summary line that says a test
# failed; without this the record of a failed run can say "2 issues" without saying which.
set -uo pipefail
log=$(mktemp "${TMPDIR:-/tmp}/fetchd-test-pass.XXXXXX")
trap 'rm -f "$log"' EXIT
# A bound on the pass: when the test process crashes, `swift test` can wait for it for ever, and
# CI would then stop at its own limit without saying why.
limit=${FETCHD_TEST_PASS_SECONDS:-1800}
timeout --kill-after=30 "$limit" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	echo "==== this pass did not end within $limit s (FETCHD_TEST_PASS_SECONDS) and was stopped ===="
fi
if [ "$status" -ne 0 ]; then
	echo
	echo "==== the failures of this pass (exit status $status), repeated from above ===="
	# Swift Testing marks a failed test and each of its issues with ✘; XCTest says "error:";
	# a crashed test process prints "Fatal error" or a signal.
	grep -aE '✘|: error:|Fatal error|signal [0-9]+|exited with unexpected signal' "$log" | cut -c1-600 | tail -n 40
fi
exit "$status"
