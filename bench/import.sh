#!/usr/bin/env bash
# bench/import.sh: faber import, validate and dry run of Torc workflows of
# JOBS jobs (default 10,000 and 100,000), to show that the work grows
# linearly with the jobs and their dependencies (issue 27). Each workflow
# is a chain by depends_on, file-based dependencies (job i reads the files
# of jobs i-2, through ${files.input...}, and i-3, through input_files) and
# nine depends_on_regexes, as BenchmarkTorcImport (spec/importer) makes
# it. Prints a markdown table: wall time and CPU time (user + system; the
# machine's load moves the first, hardly the second), medians of REPS, and
# peak RSS (the largest); then PASS/FAIL against the goals: the largest
# size in seconds (wall under 20 s), and CPU time growing at most 1.5× as
# fast as the jobs (15× for 10× the jobs; linear is 10×, quadratic 100×).
#
#   bash bench/import.sh                    # JOBS="10000 100000" REPS=3
#   JOBS="1000 10000" REPS=1 bash bench/import.sh
set -euo pipefail
JOBS=${JOBS:-10000 100000}
REPS=${REPS:-3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
need_gnu_time
work_with_faber import

# gen N: the workflow of N jobs (importer.TorcChain's, line for line).
gen() {
	awk -v n="$1" 'BEGIN {
		print "name: big"; print "files:"
		for (i = 0; i < n; i++) printf "  - {name: f%d, path: o/%d}\n", i, i
		print "jobs:"
		step = int(n / 10); if (step < 1) step = 1
		for (i = 0; i < n; i++) {
			printf "  - name: j%d\n    command: w ${files.output.f%d}", i, i
			if (i >= 2) printf " ${files.input.f%d}", i - 2
			printf "\n"
			if (i >= 1) printf "    depends_on: [j%d]\n", i - 1
			if (i >= 3) printf "    input_files: [f%d]\n", i - 3
			if (i > 0 && i % step == 0 && i / step < 10) printf "    depends_on_regexes: [\x27^j%d$\x27]\n", int(i / 2)
		}
	}'
}

# timed OUT CMD...: runs CMD (stdout to /dev/null), appends "wall_s
# rss_kb cpu_s" to OUT.
timed() {
	local out=$1 t0 t1
	shift
	t0=$(now_ns)
	/usr/bin/time -f '%M %U %S' -o "$WORK/rss" "$@" >/dev/null
	t1=$(now_ns)
	echo "$(calc %.3f "($t1-$t0)/1e9") $(tail -1 "$WORK/rss" | awk '{print $1, $2 + $3}')" >>"$out"
}
# stat OUT COL: the median of column COL (1 wall, 3 cpu) of OUT.
stat() { awk -v c="$2" '{print $c}' "$1" | median; }

cmds="import validate dryrun"
label() {
	case $1 in
	import) echo "faber import torc w.yaml -o plan.yaml" ;;
	validate) echo "faber validate w.yaml (the Torc file)" ;;
	dryrun) echo "faber run plan.yaml --dry-run" ;;
	esac
}
for n in $JOBS; do
	gen "$n" >"$WORK/w$n.yaml"
	for rep in $(seq "$REPS"); do
		say "$n jobs: round $rep/$REPS"
		timed "$WORK/import.$n" "$WORK/faber" import torc "$WORK/w$n.yaml" -o "$WORK/plan$n.yaml"
		timed "$WORK/validate.$n" "$WORK/faber" validate "$WORK/w$n.yaml"
		timed "$WORK/dryrun.$n" "$WORK/faber" --state-dir "$WORK/state" run "$WORK/plan$n.yaml" --dry-run
	done
done
say "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
first=${JOBS%% *}
last=${JOBS##* }
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| Torc jobs (chain + files + 9 regexes) | command | wall s | CPU s | peak RSS MB |"
echo "|---|---|---|---|---|"
for n in $JOBS; do
	for c in $cmds; do
		echo "| $n | $(label "$c") | $(calc %.2f "$(stat "$WORK/$c.$n" 1)") | $(calc %.2f "$(stat "$WORK/$c.$n" 3)") | $(calc %.0f "$(awk '{print $2}' "$WORK/$c.$n" | sort -g | tail -1)/1024") |"
	done
done
echo
echo "| goal | measured | result |"
echo "|---|---|---|"
for c in $cmds; do
	w=$(stat "$WORK/$c.$last" 1)
	a=$(stat "$WORK/$c.$first" 3)
	b=$(stat "$WORK/$c.$last" 3)
	# CPU times come in hundredths: a tiny first size counts as 0.01 s.
	r=$(awk -v a="$a" -v b="$b" 'BEGIN {if (a < 0.01) a = 0.01; printf "%.1f", b / a}')
	echo "| $(label "$c"): $last jobs, wall under 20 s | $(calc %.2f "$w") s | $(pf "$w < 20") |"
	echo "| $(label "$c"): CPU for $last jobs ≤ 1.5 × $((last / first)) × for $first (linear: $((last / first))×) | ${r}× | $(pf "$r <= 1.5 * $last / $first") |"
done
