#!/usr/bin/env bash
# bench/fanout.sh: a fan-out of ITEMS items of `true` (one foreach: step,
# --jobs J) next to the process-spawn floor, `seq ITEMS | xargs -P J -n 1
# sh -c true`, alternating in each of REPS rounds. Prints a markdown table:
# wall time (median), the ratio to the floor (median of each round's own
# ratio), faber's peak RSS, and PASS/FAIL against issue 16's goals
# (ratio <= 1.3, peak RSS <= 150 MB at 10,000 items).
#
#   bash bench/fanout.sh                  # ITEMS=10000 J=8 REPS=3
#   ITEMS=2000 REPS=5 bash bench/fanout.sh
set -euo pipefail
ITEMS=${ITEMS:-10000}
J=${J:-8}
REPS=${REPS:-3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
need_gnu_time
work_with_faber fanout
printf 'name: fan\njobs: %d\nsteps:\n  - id: t\n    foreach: {range: [1, %d]}\n    run: "true"\n' "$J" "$ITEMS" >"$WORK/fan.yaml"

floor() {
	local t0
	t0=$(now_ns)
	seq "$ITEMS" | xargs -P "$J" -n 1 sh -c true
	echo $((($(now_ns) - t0) / 1000000))
}
faber() { # prints "ms rss_kb"
	local t0 t1 st=$WORK/state-$1
	t0=$(now_ns)
	/usr/bin/time -f %M -o "$WORK/rss" "$WORK/faber" run "$WORK/fan.yaml" --ui plain --state-dir "$st" >/dev/null
	t1=$(now_ns)
	echo "$(((t1 - t0) / 1000000)) $(cat "$WORK/rss")"
	rm -rf "$st"
}
: >"$WORK/f" && : >"$WORK/b" && : >"$WORK/r" && : >"$WORK/m"
for i in $(seq "$REPS"); do
	say "round $i/$REPS"
	if ((i % 2)); then
		b=$(floor)
		read -r f m < <(faber "$i")
	else
		read -r f m < <(faber "$i")
		b=$(floor)
	fi
	echo "$b" >>"$WORK/b"
	echo "$f" >>"$WORK/f"
	echo "$m" >>"$WORK/m"
	awk -v f="$f" -v b="$b" 'BEGIN {printf "%.3f\n", f / b}' >>"$WORK/r"
done
B=$(median <"$WORK/b")
F=$(median <"$WORK/f")
R=$(median <"$WORK/r")
M=$(sort -g "$WORK/m" | tail -1)
MB=$(awk -v k="$M" 'BEGIN {printf "%.0f", k / 1024}')
echo "| fan-out of $ITEMS items, --jobs $J | floor ms | faber ms | ratio | peak RSS MB |"
echo "|---|---|---|---|---|"
echo "| foreach: {range: [1, $ITEMS]}, run: \"true\" | $B | $F | $R | $MB |"
echo
echo "| goal | measured | result |"
echo "|---|---|---|"
echo "| time ≤ 1.3× the spawn floor | ${R}× | $(pf "$R <= 1.3") |"
echo "| peak RSS ≤ 150 MB | $MB MB | $(pf "$MB <= 150") |"
