#!/usr/bin/env bash
# bench/batch_array.sh: issue 29's point 7. A fan-out of ITEMS items of
# `true` on a batch executor (ENGINE=slurm, the default, or sge; batch
# mode, --jobs ITEMS so that every item is ready at once) next to the same
# work submitted by hand as one array (Slurm: `sbatch --array=0-<ITEMS-1>
# --wait --wrap true`; Grid Engine: `qsub -sync y -t 1-<ITEMS> -b y true`),
# alternating in each of REPS rounds, on the cluster the environment names
# (scripts/slurm-cluster.sh or scripts/sge-cluster.sh start). Wrappers first
# in PATH count faber's submissions and status calls. Prints a markdown
# table: submissions per fan-out, status calls and their rate, wall time
# (median) and its ratio to the hand-made array (median of each round's
# ratio), faber's peak RSS, and PASS/FAIL against the goals (a few
# submissions per fan-out, one status call per tick, wall <= 1.2x).
#
#   eval "$(scripts/slurm-cluster.sh start)"
#   bash bench/batch_array.sh                 # ITEMS=100 REPS=3
#   ITEMS=1000 REPS=1 bash bench/batch_array.sh   # ~10 min on the 2-CPU test cluster
#   eval "$(scripts/sge-cluster.sh start)"
#   ENGINE=sge bash bench/batch_array.sh
#   MAXPAR=10 bash bench/batch_array.sh        # max_parallel: 10 on the fan-out,
#                                             # %10 (-tc 10) on the hand-made array
set -euo pipefail
ITEMS=${ITEMS:-100}
MAXPAR=${MAXPAR:-}
REPS=${REPS:-3}
ENGINE=${ENGINE:-slurm}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
need_gnu_time
case $ENGINE in
slurm)
	title=Slurm submit=sbatch status=squeue
	if ! sinfo >/dev/null 2>&1; then
		say "no Slurm cluster answers (sinfo); start one: eval \"\$(scripts/slurm-cluster.sh start)\""
		exit 2
	fi
	hand='`sbatch --array --wait`'
	;;
sge)
	title="Grid Engine" submit=qsub status=qstat
	if ! qstat >/dev/null 2>&1; then
		say "no Grid Engine cluster answers (qstat); start one: eval \"\$(scripts/sge-cluster.sh start)\""
		exit 2
	fi
	hand='`qsub -sync y -t`'
	;;
*)
	say "ENGINE=$ENGINE: slurm or sge"
	exit 2
	;;
esac
work_with_faber batcharray
mkdir -p "$WORK/bin"
for c in $submit $status; do
	real=$(command -v "$c")
	printf '#!/bin/sh\necho "$(date +%%s%%N) %s" >>"%s/calls"\nexec %s "$@"\n' "$c" "$WORK" "$real" >"$WORK/bin/$c"
	chmod +x "$WORK/bin/$c"
done
printf 'name: arr\nexecutor: %s\nsteps:\n  - id: t\n    foreach: {range: [1, %d]}\n    run: "true"\n' "$ENGINE" "$ITEMS" >"$WORK/arr.yaml"
throttle_s='' throttle_q=() under=''
if [ -n "$MAXPAR" ]; then
	printf '    max_parallel: %d\n' "$MAXPAR" >>"$WORK/arr.yaml"
	throttle_s="%$MAXPAR" throttle_q=(-tc "$MAXPAR") under=", max_parallel $MAXPAR"
fi

by_hand() { # prints ms
	local t0
	t0=$(now_ns)
	if [ "$ENGINE" = slurm ]; then
		sbatch --array=0-$((ITEMS - 1))$throttle_s --wait --output=/dev/null --job-name=bench-hand --wrap true >/dev/null
	else
		qsub -sync y -t 1-"$ITEMS" "${throttle_q[@]}" -b y -o /dev/null -e /dev/null -N bench-hand true >/dev/null
	fi
	echo $((($(now_ns) - t0) / 1000000))
}
faber_run() { # prints "ms rss_kb submissions status_calls"
	local t0 t1 st=$WORK/state
	: >"$WORK/calls"
	t0=$(now_ns)
	PATH="$WORK/bin:$PATH" /usr/bin/time -f %M -o "$WORK/rss" "$WORK/faber" run "$WORK/arr.yaml" --jobs "$ITEMS" --ui plain --state-dir "$st" >/dev/null
	t1=$(now_ns)
	echo "$(((t1 - t0) / 1000000)) $(cat "$WORK/rss") $(grep -c " $submit\$" "$WORK/calls") $(grep -c " $status\$" "$WORK/calls")"
	rm -rf "$st"
}
R=$WORK/rounds
: >"$R"
for i in $(seq "$REPS"); do
	say "round $i/$REPS: $ITEMS items"
	if ((i % 2)); then
		h=$(by_hand)
		read -r f rss sb sq <<<"$(faber_run)"
	else
		read -r f rss sb sq <<<"$(faber_run)"
		h=$(by_hand)
	fi
	echo "$f $h $(calc %.3f "$f / $h") $rss $sb $sq" >>"$R"
done
col() { awk -v c="$1" '{print $c}' "$R"; }
fm=$(col 1 | median)
hm=$(col 2 | median)
ratio=$(col 3 | median)
rss=$(col 4 | median)
sb=$(col 5 | median)
sq=$(col 6 | median)
rate=$(calc %.2f "$sq / ($fm / 1000)")
echo "| $ITEMS-item fan-out$under on $title (batch), $REPS rounds, load $(cut -d' ' -f1-3 /proc/loadavg) | value | goal |"
echo "|---|---|---|"
echo "| $submit submissions by faber | $sb | $(pf "$sb <= 3") (a few per fan-out) |"
echo "| $status calls by faber (one per tick, all jobs) | $sq ($rate per s) | $(pf "$rate <= 5.5") (at most one per 0.2 s tick) |"
echo "| faber's wall time | $(calc %.1f "$fm / 1000") s | |"
echo "| the hand-made array ($hand) | $(calc %.1f "$hm / 1000") s | |"
echo "| ratio (median of rounds) | ${ratio}× | $(pf "$ratio <= 1.2") (≤ 1.2×) |"
echo "| faber's peak RSS | $(calc %.0f "$rss / 1024") MB | |"
