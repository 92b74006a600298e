#!/usr/bin/env bash
# bench/resources.sh: issue 31's bench of the packing scheduler. A plan of
# mixed `sleep` steps (one-CPU steps, two-CPU steps that share a pool,
# steps with a large memory request, GPU steps) on a capacity set with the
# plan's `resources:` and `pools:`; each run's makespan (first start to last
# end, from `faber events RUN --json`) against a lower bound, and the
# largest sums of reservations held at once, swept from the same events,
# against the capacity. Goals: makespan ≤ 1.15× the lower bound (median of
# the rounds), zero oversubscription. The plan is run in each ORDER (the
# big steps first, interleaved, last), since the scheduler keeps plan order.
# Prints markdown on stdout, progress on stderr.
#
#   bash bench/resources.sh                  # 3 orders × REPS=3 runs of ~12 s: ~2 min
#   REPS=5 ORDERS="last" bash bench/resources.sh
#   N1=8 D1=0.05 N2=2 D2=0.1 NM=2 DM=0.1 NG=1 DG=0.1 REPS=1 bash bench/resources.sh   # a quick look
#
# Environment (durations in seconds, sizes in GiB):
#   CPUS, MEM, GPUS    the run's capacity: resources: {cpus, memory, gpus} (4, 16, 2;
#                      each a whole number ≥ 1, MEM in GiB)
#   POOL               size of pool db, which the two-CPU steps use (2)
#   N1, D1             one-CPU steps and their sleep (40, 0.5)
#   N2, D2             two-CPU steps (cpus: 2, pool: db) and their sleep (8, 1)
#   NM, DM, MEMREQ     big-memory steps (cpus: 1, memory: MEMREQ G) and their
#                      sleep (4, 2, 6): they sleep, they allocate nothing
#   NG, DG             GPU steps (cpus: 1, gpus: 1) and their sleep (4, 1)
#   J                  jobs: of the plan, a cap on running steps (64)
#   ORDERS             plan orders to run: first (big steps first), mixed
#                      (spread among the one-CPU steps), last ("first mixed last")
#   REPS               rounds; each runs every order once (3)
#   GOAL               the makespan goal, a multiple of the lower bound (1.15)
#   STATE_BASE         where the work dir goes (bench/.work in the repository)
#   FABER_BIN          a faber binary to measure instead of building the repository's
#   KEEP               1 keeps the work dir
set -euo pipefail

CPUS=${CPUS:-4}
MEM=${MEM:-16}
GPUS=${GPUS:-2}
POOL=${POOL:-2}
N1=${N1:-40}
D1=${D1:-0.5}
N2=${N2:-8}
D2=${D2:-1}
NM=${NM:-4}
DM=${DM:-2}
MEMREQ=${MEMREQ:-6}
NG=${NG:-4}
DG=${DG:-1}
J=${J:-64}
ORDERS=${ORDERS-first mixed last}
REPS=${REPS:-3}
GOAL=${GOAL:-1.15}
for v in CPUS MEM GPUS POOL; do
	if ! [[ ${!v} =~ ^[0-9]+$ ]] || ((${!v} < 1)); then
		echo "bench: $v=${!v}: each of the capacity's members is a whole number ≥ 1 (as faber's resources: and pools: take them)" >&2
		exit 2
	fi
done
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
command -v jq >/dev/null || { say "bench: resources.sh needs jq"; exit 1; }
LC_NUMERIC=C

work_with_faber resources
cd "$WORK"
GIB=1073741824

# ---------------------------------------------------------------- the plan

# steps ORDER: one line per step, "kind" (1 one-CPU, 2 two-CPU, m memory,
# g GPU), in plan order. first: m, g, 2, then the 1s; last: the 1s, then
# 2, g, m; mixed: the big steps spread evenly among the 1s.
steps() {
	local big
	big=$({ seq "$NM" | sed 's/.*/m/'; seq "$NG" | sed 's/.*/g/'; seq "$N2" | sed 's/.*/2/'; } | tr '\n' ' ')
	case $1 in
	first) { printf '%s\n' $big; seq "$N1" | sed 's/.*/1/'; } ;;
	last) { seq "$N1" | sed 's/.*/1/'; printf '%s\n' $big | tac; } ;;
	mixed) awk -v n1="$N1" -v big="$big" 'BEGIN {
		nb = split(big, b, " "); n = n1 + nb; j = 0
		# the k-th big step goes at about position (k - 0.5) × n / nb
		for (i = 1; i <= n; i++) {
			if (j < nb && i >= (j + 0.5) * n / nb) print b[++j]; else print 1
		}
	}' ;;
	*)
		say "bench: unknown order $1 (ORDERS takes first mixed last)"
		exit 2
		;;
	esac
}

# gen_plan ORDER: one parallel phase of every step, in that order.
gen_plan() {
	printf 'name: packing-%s\njobs: %d\nresources: {cpus: %d, memory: %dG, gpus: %d}\npools: {db: %d}\n' "$1" "$J" "$CPUS" "$MEM" "$GPUS" "$POOL"
	printf 'phases:\n  - name: p\n    parallel: true\n    steps:\n'
	steps "$1" | awk -v d1="$D1" -v d2="$D2" -v dm="$DM" -v dg="$DG" -v mem="$MEMREQ" '{
		i++
		if ($1 == "1") printf "      - {id: s%d-cpu1, cpus: 1, run: \"sleep %s\"}\n", i, d1
		if ($1 == "2") printf "      - {id: s%d-cpu2, cpus: 2, pool: db, run: \"sleep %s\"}\n", i, d2
		if ($1 == "m") printf "      - {id: s%d-mem, cpus: 1, memory: %dG, run: \"sleep %s\"}\n", i, mem, dm
		if ($1 == "g") printf "      - {id: s%d-gpu, cpus: 1, gpus: 1, run: \"sleep %s\"}\n", i, dg
	}'
}

# ---------------------------------------------------------------- the lower bound

NSTEPS=$((N1 + N2 + NM + NG))
CPU_S=$(calc %.3f "$N1*$D1 + $N2*2*$D2 + $NM*$DM + $NG*$DG")
LB_CPU=$(calc %.3f "$CPU_S/$CPUS")
LB_MEM=$(calc %.3f "$NM*$MEMREQ*$DM/$MEM")
LB_GPU=$(calc %.3f "$NG*$DG/$GPUS")
LB_POOL=$(calc %.3f "$N2*$D2/$POOL")
LONGEST=$( (
	((N1)) && echo "$D1"
	((N2)) && echo "$D2"
	((NM)) && echo "$DM"
	((NG)) && echo "$DG"
	echo 0
) | sort -g | tail -1)
LB=$(printf '%s\n' "$LB_CPU" "$LB_MEM" "$LB_GPU" "$LB_POOL" "$LONGEST" | sort -g | tail -1)

# ---------------------------------------------------------------- the sweep

# sweep: reads a run's events (JSON lines) and prints "makespan cpus
# memory_bytes gpus db over shared starts": the makespan (the first
# in_progress event's time to the time of the last status event that ends
# an attempt), the largest sums of what attempts held at once, the number
# of starts after which a sum exceeded the capacity (or a GPU index was
# outside it), the number of GPU devices given to a step while another held
# them, and the attempts started. An attempt holds its `reserved` from its
# in_progress event to its step's next step_status event; events are taken
# in commit order (seq), so a release and a start committed together count
# in the order faber recorded them.
SWEEP='
def t: capture("^(?<s>[^.Z]+)(\\.(?<f>[0-9]+))?Z$")
	| ((.s + "Z") | fromdateiso8601) + ("0." + (.f // "0") | tonumber);
def over: .cpus > $cpus or .mem > $mem or .gpu > $gpus or ([.pools[]] | map(select(. > $pool)) | length > 0);
[inputs | select(.type == "step_status")] | sort_by(.seq)
| reduce .[] as $e ({run: {}, cpus: 0, mem: 0, gpu: 0, held: {}, pools: {},
	max: {cpus: 0, mem: 0, gpu: 0, db: 0}, over: 0, shared: 0, starts: 0, first: null, last: null};
	if .run[$e.step_id] != null then
		(.run[$e.step_id]) as $r
		| .cpus -= ($r.cpus // 0) | .mem -= ($r.memory_bytes // 0) | .gpu -= (($r.gpus // []) | length)
		| reduce ($r.gpus // [])[] as $g (.; .held |= del(.[$g | tostring]))
		| reduce ($r.pools // [])[] as $p (.; .pools[$p] -= 1)
		| .run |= del(.[$e.step_id])
		| .last = ($e.time | t)
	else . end
	| if $e.status == "in_progress" then
		($e.reserved // {}) as $r
		| .starts += 1 | .first = (.first // ($e.time | t))
		| .run[$e.step_id] = $r
		| .cpus += ($r.cpus // 0) | .mem += ($r.memory_bytes // 0) | .gpu += (($r.gpus // []) | length)
		| reduce ($r.gpus // [])[] as $g (.;
			(if .held[$g | tostring] then .shared += 1 else . end)
			| (if $g >= $gpus or $g < 0 then .over += 1 else . end)
			| .held[$g | tostring] = true)
		| reduce ($r.pools // [])[] as $p (.; .pools[$p] = ((.pools[$p] // 0) + 1))
		| .max.cpus = ([.max.cpus, .cpus] | max) | .max.mem = ([.max.mem, .mem] | max)
		| .max.gpu = ([.max.gpu, .gpu] | max) | .max.db = ([.max.db, (.pools.db // 0)] | max)
		| (if over then .over += 1 else . end)
	else . end)
| "\(.last - .first) \(.max.cpus) \(.max.mem) \(.max.gpu) \(.max.db) \(.over) \(.shared) \(.starts)"'

# one ORDER: runs the plan in a fresh state dir, appends the sweep's line
# to $WORK/ORDER.txt.
one() {
	local st=$WORK/st-$1-$2 line
	if ! "$FABER" --state-dir "$st" run "$WORK/$1.yaml" --ui plain >"$WORK/out.txt" 2>&1; then
		say "bench: faber run $1.yaml failed:"
		cat "$WORK/out.txt" >&2
		exit 1
	fi
	"$FABER" --state-dir "$st" events --last --json >"$WORK/events.jsonl"
	line=$(jq -nr --argjson cpus "$CPUS" --argjson mem "$((MEM * GIB))" --argjson gpus "$GPUS" --argjson pool "$POOL" "$SWEEP" <"$WORK/events.jsonl")
	echo "$line" >>"$WORK/$1.txt"
	say "  $1: makespan $(calc %.2f "${line%% *}") s (lower bound $LB s); held at most cpus/memory/gpus/db: $(cut -d' ' -f2-5 <<<"$line")"
}

# ---------------------------------------------------------------- the rounds

CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
COMMIT=$(faber_label)
echo "## The packing scheduler (issue 31, bench/resources.sh)"
echo
echo "$(nproc) CPUs, $CPU; faber: $COMMIT; REPS=$REPS; load average at the start: $(load)."
echo
echo "Capacity: \`resources: {cpus: $CPUS, memory: ${MEM}G, gpus: $GPUS}\`, \`pools: {db: $POOL}\`, \`jobs: $J\`. Plan: one parallel phase of $NSTEPS \`sleep\` steps: $N1 × (cpus: 1, ${D1} s), $N2 × (cpus: 2, pool: db, ${D2} s), $NM × (cpus: 1, memory: ${MEMREQ}G, ${DM} s), $NG × (cpus: 1, gpus: 1, ${DG} s)."
echo
echo "Lower bound: max(CPU-seconds / CPUs = $CPU_S / $CPUS = $LB_CPU, memory GiB-seconds / memory = $(calc %.3f "$NM*$MEMREQ*$DM") / $MEM = $LB_MEM, GPU-seconds / GPUs = $LB_GPU, pool-seconds / pool size = $LB_POOL, the longest step = $LONGEST) = **$LB s**."
echo

for o in $ORDERS; do
	gen_plan "$o" >"$WORK/$o.yaml"
	: >"$WORK/$o.txt"
done
for r in $(seq "$REPS"); do
	say "round $r/$REPS"
	for o in $ORDERS; do
		one "$o" "$r"
	done
done

# ---------------------------------------------------------------- the table

col() { awk -v c="$1" '{print $c}' "$2"; }
largest() { sort -g | tail -1; }
smallest() { sort -g | head -1; }
gib() { calc %.1f "$1/$GIB"; }

echo "| order of the plan | figure | measured | result |"
echo "|---|---|---|---|"
OVER=0 SHARED=0 RATIOS=$WORK/ratios.txt
: >"$RATIOS"
for o in $ORDERS; do
	f=$WORK/$o.txt
	col 1 "$f" | awk -v lb="$LB" '{printf "%.4f\n", $1 / lb}' >"$WORK/$o.ratio"
	cat "$WORK/$o.ratio" >>"$RATIOS"
	m=$(col 1 "$f" | median)
	q=$(median <"$WORK/$o.ratio")
	starts=$(col 8 "$f" | smallest)
	over=$(col 6 "$f" | largest)
	shared=$(col 7 "$f" | largest)
	OVER=$((OVER + over)) SHARED=$((SHARED + shared))
	echo "| $o | makespan, first start to last end ($REPS rounds, $(calc %.2f "$(col 1 "$f" | smallest)")–$(calc %.2f "$(col 1 "$f" | largest)") s; attempts started: $starts of $NSTEPS) | $(calc %.2f "$m") s | info |"
	echo "| $o | makespan ≤ ${GOAL}× the lower bound ($LB s; median of $REPS rounds, $(calc %.3f "$(smallest <"$WORK/$o.ratio")")–$(calc %.3f "$(largest <"$WORK/$o.ratio")")) | $(calc %.3f "$q")× | $(pf "$q <= $GOAL") |"
	echo "| $o | largest sums held at once: CPUs / memory / GPUs / pool db (capacity $CPUS / $MEM GiB / $GPUS / $POOL; most of $REPS rounds) | $(col 2 "$f" | largest) / $(gib "$(col 3 "$f" | largest)") GiB / $(col 4 "$f" | largest) / $(col 5 "$f" | largest) | $(pf "$over == 0 && $shared == 0") |"
done
q=$(median <"$RATIOS")
echo "| all | makespan / lower bound ≤ ${GOAL}×, median of every run ($(wc -l <"$RATIOS") runs, $(calc %.3f "$(smallest <"$RATIOS")")–$(calc %.3f "$(largest <"$RATIOS")")) | $(calc %.3f "$q")× | $(pf "$q <= $GOAL") |"
echo "| all | oversubscription: starts after which a sum exceeded the capacity, GPU devices given while held | $OVER, $SHARED | $(pf "$OVER == 0 && $SHARED == 0") |"
echo
echo "Load average at the end: $(load)."
