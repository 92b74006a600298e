#!/usr/bin/env bash
# bench/cache.sh: the cost of deciding that a step is cached. A step with
# inputs: [data] over SIZE_MB of files (FILES of them) is run once, then in
# each of REPS rounds faber runs the plan again (a cache hit: every input is
# read and hashed, SHA-256, and the step is skipped) next to `sha256sum` of
# the same files, alternating which goes first; the files are read once
# before, so both find them in the page cache. Prints a markdown table: wall
# time (median), the ratio faber / sha256sum (median of each round's own
# ratio), and PASS/FAIL against issue 18's goal (ratio <= 1.5 at 1 GB).
#
#   bash bench/cache.sh                      # SIZE_MB=1024 FILES=16 REPS=3
#   SIZE_MB=256 REPS=5 bash bench/cache.sh
set -euo pipefail
SIZE_MB=${SIZE_MB:-1024}
FILES=${FILES:-16}
REPS=${REPS:-3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
command -v sha256sum >/dev/null || { say "bench: sha256sum is missing"; exit 1; }
work_with_faber cache
say "writing $SIZE_MB MB in $FILES files"
mkdir -p "$WORK/data"
per=$(((SIZE_MB * 1024 + FILES - 1) / FILES)) # KiB per file
for i in $(seq "$FILES"); do
	head -c "$((per * 1024))" /dev/urandom >"$WORK/data/f$i.bin"
done
printf 'name: cachebench\nsteps:\n  - id: hash\n    inputs: [data]\n    run: "true"\n' >"$WORK/plan.yaml"
cat "$WORK"/data/* >/dev/null
cd "$WORK"
./faber run plan.yaml --ui plain --state-dir "$WORK/state" >/dev/null

floor() {
	local t0
	t0=$(now_ns)
	sha256sum data/* >/dev/null
	echo $((($(now_ns) - t0) / 1000000))
}
faber() {
	local t0
	t0=$(now_ns)
	./faber run plan.yaml --ui plain --state-dir "$WORK/state" >"$WORK/out"
	echo $((($(now_ns) - t0) / 1000000))
	grep -q 'hash cached' "$WORK/out" || { say "bench: the step was not a cache hit:"; cat "$WORK/out" >&2; exit 1; }
}
: >"$WORK/f" && : >"$WORK/b" && : >"$WORK/r"
for i in $(seq "$REPS"); do
	say "round $i/$REPS"
	if ((i % 2)); then
		b=$(floor)
		f=$(faber)
	else
		f=$(faber)
		b=$(floor)
	fi
	echo "$b" >>"$WORK/b"
	echo "$f" >>"$WORK/f"
	awk -v f="$f" -v b="$b" 'BEGIN {if (b < 1) b = 1; printf "%.3f\n", f / b}' >>"$WORK/r"
done
B=$(median <"$WORK/b")
F=$(median <"$WORK/f")
R=$(median <"$WORK/r")
echo "| inputs: $SIZE_MB MB in $FILES files | sha256sum ms | faber ms (cache hit) | ratio |"
echo "|---|---|---|---|"
echo "| content (SHA-256) | $B | $F | $R |"
echo
echo "| goal | measured | result |"
echo "|---|---|---|"
echo "| a cache hit ≤ 1.5× sha256sum of its inputs | ${R}× | $(pf "$R <= 1.5") |"
