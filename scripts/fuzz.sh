#!/usr/bin/env bash
# fuzz.sh TARGET PACKAGE runs one fuzz target for FUZZTIME (make fuzz).
#
# Go 1.26's fuzzing coordinator can stop a run that found nothing with
# "context deadline exceeded" when -fuzztime expires while a worker is busy
# (go.dev/issue/75804, fixed in Go 1.27); a loaded machine makes it likely.
# Such a run wrote no failing input: it is run again, up to three times. A
# run that fails any other way, or writes a failing input to
# PACKAGE/testdata/fuzz/TARGET, fails at once.
set -uo pipefail
target=$1 pkg=$2
dir="$pkg/testdata/fuzz/$target"
for attempt in 1 2 3; do
	before=$(ls "$dir" 2>/dev/null)
	out=$(${GO:-go} test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-10s}" -fuzzminimizetime "${FUZZMIN:-2s}" "$pkg" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	if [ "$rc" -eq 0 ]; then
		exit 0
	fi
	after=$(ls "$dir" 2>/dev/null)
	if [ "$before" != "$after" ] || ! grep -q '^    context deadline exceeded$' <<<"$out"; then
		exit "$rc"
	fi
	echo "fuzz.sh: $target stopped at its fuzztime with Go's coordinator race (go.dev/issue/75804) and wrote no failing input; running it again ($attempt of 3)" >&2
done
exit 1
