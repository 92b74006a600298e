#!/usr/bin/env bash
# bench/goals28.sh: the goals of issue 28 (cached fan-outs, fan-out memory,
# a run's fixed cost, reads that do not replay history), each measured as a
# ratio or a figure in one run, with PASS or FAIL, the load average at its
# start and end, and the figure before issue 28's work (faber at 521f449)
# when the sizes are the defaults. Prints markdown on stdout, progress on
# stderr. State dirs are on disk, in the repository (bench/.work).
#
#   bash bench/goals28.sh                     # N=10000 REPS=3, 6–8 min at a load of 4–12
#   GOALS="3" REPS=5 bash bench/goals28.sh    # only the fixed cost and the chains
#   N=200 REPS=1 CHAINS="10" bash bench/goals28.sh   # a quick look
#
# Environment:
#   N           items of the fan-outs (goals 1, 2), steps of the run that
#               goal 4's status reads (10000)
#   SMALL       the small fan-out of goal 2's memory per item (N/10)
#   LIST        runs in the state dir that goal 4's list reads (N)
#   J           jobs of the fan-outs and of the listed steps (8)
#   REPS        rounds of the long measurements (goals 1, 2) (3)
#   PAIRS       pairs of the short ones: the one-step run and faber version,
#               status, list (20 × REPS / 3); a chain of C steps gets
#               max(5, PAIRS × 100 / C) pairs
#   CHAINS      chain lengths of goal 3 ("100 300 1000")
#   GOALS       which goals to measure ("1 2 3 4")
#   STATE_BASE  where the work dir goes (bench/.work in the repository)
#   FABER_BIN   a faber binary to measure instead of building the repository's
#               (the figures before a change: build the old commit, point here)
#   SETTLE_US, SETTLE_S   before each goal, wait while creating a file in the
#               work dir costs more than SETTLE_US µs, at most SETTLE_S s
#               (80, 120; lib.sh, settle)
#   KEEP        1 keeps the work dir
set -euo pipefail

N=${N:-10000}
SMALL=${SMALL:-$((N / 10))}
LIST=${LIST:-$N}
J=${J:-8}
REPS=${REPS:-3}
PAIRS=${PAIRS:-$((20 * REPS / 3))}
CHAINS=${CHAINS-100 300 1000}
GOALS=${GOALS-1 2 3 4}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
need_gnu_time

mkdir -p "${STATE_BASE:=$REPO/bench/.work}"
# A block group of its own for the work dir, away from the last bench run's
# deletions (see run.sh).
chattr +T "$STATE_BASE" 2>/dev/null || true
WORK=$(mktemp -d "$STATE_BASE/faber-goals28.XXXXXX")
own_registry
cleanup() {
	if [[ ${KEEP:-} == 1 ]]; then
		say "work dir kept: $WORK"
	else
		cd /
		rm -rf "$WORK"
		sync
	fi
}
trap cleanup EXIT
FABER=$WORK/faber
if [[ -n ${FABER_BIN:-} ]]; then
	cp "$FABER_BIN" "$FABER"
else
	build_faber "$FABER"
fi
cd "$WORK"

# ---------------------------------------------------------------- figures before

# The figures of faber at 521f449 (main before issue 28's work), measured by
# this script with its defaults on 2026-11-27 11:37–11:44 UTC, at a load
# average of 6–11 on the 2 vCPUs (other jobs): shown in the "before" column
# when N, LIST and J are the defaults. The load inflates the times and moves
# the ratios: two runs before it (11:22 and 11:30 UTC, loads 9–12 and 4–10)
# gave the cached run 23.5× and 20.4× cat, the one-step run 3.32× and 3.07×
# version, the chains 1.65/1.63/1.11× and 1.51/1.45/1.35×, status 485 and
# 351 ms, list 0.534 and 0.226 s; the peaks moved less (cached run 739 and
# 970 MB, foreach 188 and 186 MB).
BEFORE_WHEN="faber at 521f449 (before issue 28's work), this script with its defaults, 2026-11-27 11:37 UTC, load average 6–11"
declare -A BEFORE=(
	[1.first_wall]="46.08 s"
	[1.cached_wall]="4410.6 ms"
	[1.cat]="150.9 ms"
	[1.ncached]="10000 of 10000"
	[1.ratio]="23.80×"
	[1.cached_rss]="749 MB"
	[1.first_rss]="314 MB"
	[2.listed_rss]="79 MB"
	[2.ratio]="2.37×"
	[2.rss]="192 MB"
	[2.per_item]="16.53 KB"
	[2.per_step]="4.65 KB"
	[3.one_ms]="50.1 ms"
	[3.version_ms]="15.9 ms"
	[3.one]="3.40×"
	[3.chain100]="1.52×"
	[3.chain300]="1.30×"
	[3.chain1000]="1.49×"
	[4.version_ms]="9.5 ms"
	[4.status]="551.0 ms"
	[4.status_json]="245.4 ms"
	[4.list]="0.426 s"
)
DEFAULTS=0
[[ $N == 10000 && $LIST == 10000 && $J == 8 ]] && DEFAULTS=1

# row WHAT MEASURED KEY RESULT: one row of a goal's table (the "before"
# column only at the default sizes).
row() {
	if ((DEFAULTS)); then
		echo "| $1 | $2 | ${BEFORE[$3]:-} | $4 |"
	else
		echo "| $1 | $2 | $4 |"
	fi
}

# ---------------------------------------------------------------- helpers


# goal_start TITLE: syncs and settles the disk, then heads the goal's table
# with the load average at its start.
goal_start() {
	settle "$WORK"
	echo "### $1"
	echo
	echo "Load average at the start: $(load); state dirs on $(fstype "$WORK") (read-ahead $(readahead "$WORK")), $SETTLED."
	echo
	if ((DEFAULTS)); then
		echo "| figure | measured | before | result |"
		echo "|---|---|---|---|"
	else
		echo "| figure | measured | result |"
		echo "|---|---|---|"
	fi
}
goal_end() {
	echo
	echo "Load average at the end: $(load)."
	echo
}

# The clock is bash's own ($EPOCHREALTIME, read without a fork): now_ns
# (date) would add a fork and exec, a millisecond or more under load, to
# every figure, and a 12 ms `faber version` feels it.
LC_NUMERIC=C
[[ -n ${EPOCHREALTIME:-} ]] || { say "bench: goals28.sh needs bash 5 or later (EPOCHREALTIME)"; exit 1; }

# timed OUT CMD...: runs CMD under GNU time, its stdout to OUT; sets T (wall
# seconds) and RSS (peak, KB). A failure ends the bench.
timed() {
	local out=$1 t0 t1 rc=0
	shift
	t0=$EPOCHREALTIME
	/usr/bin/time -f %M -o "$WORK/time.txt" "$@" >"$out" 2>"$WORK/stderr.txt" || rc=$?
	t1=$EPOCHREALTIME
	if ((rc)); then
		say "bench: $* exited $rc:"
		cat "$WORK/stderr.txt" >&2
		exit 1
	fi
	T=$(calc %.6f "$t1-$t0")
	RSS=$(tail -1 "$WORK/time.txt")
}

# wall CMD...: runs CMD (no wrapper, no shell), output to /dev/null; sets T
# (wall seconds). A failure ends the bench.
wall() {
	local t0 t1 rc=0
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$WORK/stderr.txt" || rc=$?
	t1=$EPOCHREALTIME
	if ((rc)); then
		say "bench: $* exited $rc:"
		cat "$WORK/stderr.txt" >&2
		exit 1
	fi
	T=$(calc %.6f "$t1-$t0")
}

# pairs OUT K A B: K pairs of A and B (commands or functions, no arguments),
# alternating which goes first; appends each pair's "a b a/b" (seconds) to
# OUT.
pairs() {
	local out=$1 k=$2 a=$3 b=$4 i ta tb
	for i in $(seq "$k"); do
		if ((i % 2)); then
			wall "$a"; ta=$T
			wall "$b"; tb=$T
		else
			wall "$b"; tb=$T
			wall "$a"; ta=$T
		fi
		echo "$ta $tb $(calc %.6f "$ta/$tb")" >>"$out"
	done
}
version() { "$FABER" version; }

col() { awk -v c="$1" '{print $c}' "$2"; }
largest() { sort -g | tail -1; }
smallest() { sort -g | head -1; }
mb() { calc %.0f "$1/1024"; }
ms() { calc %.1f "$1*1000"; }
# span FILE COL SCALE FMT: "lo–hi" of a column.
span() { echo "$(calc "$4" "$(col "$2" "$1" | smallest)*$3")–$(calc "$4" "$(col "$2" "$1" | largest)*$3")"; }

SEQ=0
fresh_dir() { # fresh_dir BASE: a new state dir under BASE in FRESH; nothing is deleted before the end
	SEQ=$((SEQ + 1))
	FRESH=$1/st$SEQ
}

gen_foreach() { # gen_foreach NAME ITEMS [INPUTS]: one foreach step of `true`
	printf 'name: %s\njobs: %d\nsteps:\n  - id: t\n    foreach: {range: [1, %d]}\n' "$1" "$J" "$2"
	[[ -z ${3:-} ]] || printf '    inputs: ["%s"]\n' "$3"
	printf '    run: "true"\n'
}
gen_listed() { # gen_listed NAME STEPS: the same steps listed, one parallel phase
	printf 'name: %s\njobs: %d\nphases:\n  - name: p\n    parallel: true\n    steps:\n' "$1" "$J"
	seq "$2" | awk '{printf "      - {id: s%d, run: \"true\"}\n", $1}'
}
gen_chain() { # gen_chain STEPS: each step needs the one before
	printf 'name: chain%d\nsteps:\n  - {id: s1, run: "true"}\n' "$1"
	seq 2 "$1" | awk '{printf "  - {id: s%d, needs: [s%d], run: \"true\"}\n", $1, $1 - 1}'
}

# ---------------------------------------------------------------- heading

CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
COMMIT=$(faber_label)
echo "## Goals of issue 28 (bench/goals28.sh)"
echo
echo "$(nproc) CPUs, $CPU; faber: $COMMIT; N=$N SMALL=$SMALL LIST=$LIST J=$J REPS=$REPS PAIRS=$PAIRS; load average at the start $(load). Times are medians, ratios the median of each pair's own ratio, peaks the largest of the rounds (with their range)."
echo
if ((DEFAULTS)); then
	echo "\"before\": $BEFORE_WHEN."
	echo
fi

# ---------------------------------------------------------------- goal 1

goal1() {
	local d=$WORK/g1 R1=$WORK/g1first.txt R=$WORK/g1cached.txt i k st n
	say "goal 1: writing $N input files"
	mkdir -p "$d/in"
	(cd "$d" && seq "$N" | awk '{f = "in/" $1 ".txt"; print $1 > f; close(f)}')
	gen_foreach cached "$N" "in/{item}.txt" >"$d/plan.yaml"
	: >"$R1" && : >"$R"
	goal_start "1. A fully cached fan-out of $N items, one input file each"
	cd "$d"
	# A cached run next to cat, appending "wall peak cat_wall ratio items_cached" to R.
	cached_pair() {
		local tc tf
		if ((k % 2)); then
			wall sh -c 'cat in/* >/dev/null'
			tc=$T
			timed "$WORK/g1.cached" "$FABER" --state-dir "$st" run plan.yaml --ui plain
			tf=$T
		else
			timed "$WORK/g1.cached" "$FABER" --state-dir "$st" run plan.yaml --ui plain
			tf=$T
			wall sh -c 'cat in/* >/dev/null'
			tc=$T
		fi
		# The plain output says "≡ t[I] cached" for each item the run did not run.
		n=$(grep -cE '≡ t\[[0-9]+\] cached$' "$WORK/g1.cached" || true)
		echo "$tf $RSS $tc $(calc %.6f "$tf/$tc") $n" >>"$R"
	}
	for i in $(seq "$REPS"); do
		say "goal 1: round $i/$REPS"
		fresh_dir "$WORK/g1st"
		st=$FRESH
		timed "$WORK/g1.first" "$FABER" --state-dir "$st" run plan.yaml --ui plain
		echo "$T $RSS" >>"$R1"
		# The first run's writes are written back before the pairs, which
		# both sides would otherwise pay.
		sync
		cat in/* >/dev/null
		for k in $(seq $(((i - 1) * REPS + 1)) $((i * REPS))); do cached_pair; done
	done
	cd "$WORK"
	local ratio crss frss ncached
	ratio=$(calc %.2f "$(col 4 "$R" | median)")
	crss=$(mb "$(col 2 "$R" | largest)")
	frss=$(mb "$(col 2 "$R1" | largest)")
	ncached=$(col 5 "$R" | smallest)
	row "first run (nothing cached), --jobs $J: wall" "$(calc %.2f "$(col 1 "$R1" | median)") s" 1.first_wall info
	row "cached run (the same plan again, every item a cache hit): wall" "$(ms "$(col 1 "$R" | median)") ms" 1.cached_wall info
	row "\`cat in/* > /dev/null\` of its $N inputs, paired with the cached run" "$(ms "$(col 3 "$R" | median)") ms" 1.cat info
	row "items a cached run's output says were cached (fewest of $((REPS * REPS)) runs)" "$ncached of $N" 1.ncached "$(pf "$ncached == $N")"
	row "1. cached run ≤ 3× \`cat\` of its inputs ($((REPS * REPS)) pairs, $(span "$R" 4 1 %.2f))" "${ratio}×" 1.ratio "$(pf "$ratio <= 3")"
	row "1. cached run: peak RSS ≤ 100 MB ($(span "$R" 2 1/1024 %.0f))" "$crss MB" 1.cached_rss "$(pf "$crss <= 100")"
	row "1. first run: peak RSS ≤ 150 MB ($(span "$R1" 2 1/1024 %.0f))" "$frss MB" 1.first_rss "$(pf "$frss <= 150")"
	goal_end
}

# ---------------------------------------------------------------- goal 2

LISTED_ST= # the last finished run of the N listed steps, for goal 4's status
goal2() {
	local R=$WORK/g2.txt i k
	gen_foreach fe "$N" >"$WORK/feN.yaml"
	gen_foreach fe "$SMALL" >"$WORK/feS.yaml"
	gen_listed listed "$N" >"$WORK/lsN.yaml"
	gen_listed listed "$SMALL" >"$WORK/lsS.yaml"
	: >"$R"
	goal_start "2. A fan-out of $N items without inputs next to the same $N steps listed"
	# one KIND: a run of plan KIND.yaml in a fresh state dir; sets P_KIND (peak KB).
	one() {
		fresh_dir "$WORK/g2st"
		timed /dev/null "$FABER" --state-dir "$FRESH" run "$WORK/$1.yaml" --ui plain
		printf -v "P_$1" '%s' "$RSS"
		if [[ $1 == lsN ]]; then LISTED_ST=$FRESH; fi
	}
	for i in $(seq "$REPS"); do
		say "goal 2: round $i/$REPS"
		if ((i % 2)); then
			for k in feN lsN feS lsS; do one $k; done
		else
			for k in lsN feN lsS feS; do one $k; done
		fi
		# foreach peak, listed peak, their ratio, KB per item, KB per listed step
		echo "$P_feN $P_lsN $(calc %.4f "$P_feN/$P_lsN") $(calc %.4f "($P_feN-$P_feS)/($N-$SMALL)") $(calc %.4f "($P_lsN-$P_lsS)/($N-$SMALL)")" >>"$R"
	done
	local fe ls ratio per perls
	fe=$(mb "$(col 1 "$R" | largest)")
	ls=$(mb "$(col 2 "$R" | largest)")
	ratio=$(calc %.2f "$(col 3 "$R" | median)")
	per=$(calc %.2f "$(col 4 "$R" | median)")
	perls=$(calc %.2f "$(col 5 "$R" | median)")
	row "the $N steps listed (one parallel phase), --jobs $J: peak RSS ($(span "$R" 2 1/1024 %.0f))" "$ls MB" 2.listed_rss info
	row "2. foreach of $N items, no inputs: peak RSS ≤ the steps listed (median of $REPS rounds' ratios, $(span "$R" 3 1 %.2f))" "${ratio}×" 2.ratio "$(pf "$ratio <= 1")"
	row "2. foreach of $N items: peak RSS ≤ 80 MB ($(span "$R" 1 1/1024 %.0f))" "$fe MB" 2.rss "$(pf "$fe <= 80")"
	row "2. memory per item: (peak at $N − peak at $SMALL) / $((N - SMALL)) items (median of $REPS rounds, $(span "$R" 4 1 %.2f))" "$per KB" 2.per_item info
	row "memory per listed step, the same way ($(span "$R" 5 1 %.2f))" "$perls KB" 2.per_step info
	goal_end
}

# ---------------------------------------------------------------- goal 3

goal3() {
	local R=$WORK/g3one.txt c k r fs SPAWNFLOOR
	printf 'name: one\nsteps:\n  - {id: s1, run: "true"}\n' >"$WORK/one.yaml"
	: >"$R"
	goal_start "3. A run's fixed cost, and chains next to the shell loop"
	fs=$(fstype "$WORK")
	SPAWNFLOOR=$WORK/spawnfloor
	(cd "$REPO" && CGO_ENABLED=0 go build -o "$SPAWNFLOOR" ./bench/spawnfloor)
	say "goal 3: a one-step run and faber version, $PAIRS pairs"
	fresh_dir "$WORK/g3st"
	one_run() { "$FABER" --state-dir "$FRESH" run "$WORK/one.yaml" --ui plain; }
	pairs "$R" "$PAIRS" one_run version
	row "a one-step run (\`run: \"true\"\`), state on $fs" "$(ms "$(col 1 "$R" | median)") ms" 3.one_ms info
	row "\`faber version\`, paired" "$(ms "$(col 2 "$R" | median)") ms" 3.version_ms info
	r=$(calc %.2f "$(col 3 "$R" | median)")
	row "3. a one-step run ≤ 2× \`faber version\` ($PAIRS pairs, $(span "$R" 3 1 %.2f))" "${r}×" 3.one "$(pf "$r <= 2")"
	for c in $CHAINS; do
		k=$((PAIRS * 100 / c))
		((k >= 5)) || k=5
		say "goal 3: a chain of $c and the shell loop, then the floor and the shell loop, $k pairs each"
		gen_chain "$c" >"$WORK/chain$c.yaml"
		R=$WORK/g3c$c.txt
		: >"$R"
		fresh_dir "$WORK/g3st"
		chain_run() { "$FABER" --state-dir "$FRESH" run "$WORK/chain$c.yaml" --ui plain; }
		# shellcheck disable=SC2016 # $(seq) is the loop's own
		shell_loop() { sh -c 'for i in $(seq "$1"); do sh -c true; done' sh "$c"; }
		pairs "$R" "$k" chain_run shell_loop
		r=$(calc %.2f "$(col 3 "$R" | median)")
		row "3. chain of $c ≤ 1.2× \`for i in \$(seq $c); do sh -c true; done\`, state on $fs ($k pairs, $(span "$R" 3 1 %.2f); faber $(ms "$(col 1 "$R" | median)") ms)" "${r}×" "3.chain$c" "$(pf "$r <= 1.2")"
		# The floor under it: the same starts with nothing recorded.
		R=$WORK/g3f$c.txt
		: >"$R"
		floor_run() { "$SPAWNFLOOR" "$c" "$WORK/spawnfloor.out"; }
		pairs "$R" "$k" floor_run shell_loop
		r=$(calc %.2f "$(col 3 "$R" | median)")
		row "the floor under it: \`true\` started $c times by Go's os/exec as faber starts it, nothing recorded (bench/spawnfloor; $k pairs, $(span "$R" 3 1 %.2f); $(ms "$(col 1 "$R" | median)") ms)" "${r}×" "3.floor$c" info
	done
	goal_end
}

# ---------------------------------------------------------------- goal 4

goal4() {
	local R=$WORK/g4.txt st run r s sj l
	if [[ -z $LISTED_ST ]]; then
		say "goal 4: a run of $N listed steps for status to read"
		gen_listed listed "$N" >"$WORK/lsN.yaml"
		fresh_dir "$WORK/g4st"
		LISTED_ST=$FRESH
		timed /dev/null "$FABER" --state-dir "$LISTED_ST" run "$WORK/lsN.yaml" --ui plain
	fi
	st=$LISTED_ST
	run=$(basename "$(echo "$st"/runs/*)")
	say "goal 4: $LIST finished runs for list to read"
	make_runs "$WORK/list" "$LIST"
	goal_start "4. Reads of a finished run and of many runs"
	"$FABER" --state-dir "$st" status "$run" >/dev/null # warm the page cache, as any second read would find it
	"$FABER" --state-dir "$WORK/list" list >/dev/null
	say "goal 4: status, status --json, list, $PAIRS pairs each with faber version"
	: >"$R.s" && : >"$R.j" && : >"$R.l"
	status_run() { "$FABER" --state-dir "$st" status "$run"; }
	status_json() { "$FABER" --state-dir "$st" status --json "$run"; }
	list_runs() { "$FABER" --state-dir "$WORK/list" list; }
	pairs "$R.s" "$PAIRS" status_run version
	pairs "$R.j" "$PAIRS" status_json version
	pairs "$R.l" "$PAIRS" list_runs version
	s=$(ms "$(col 1 "$R.s" | median)")
	sj=$(ms "$(col 1 "$R.j" | median)")
	l=$(calc %.3f "$(col 1 "$R.l" | median)")
	row "\`faber version\`, paired with each of the reads below" "$(ms "$(cat "$R.s" "$R.j" "$R.l" | col 2 /dev/stdin | median)") ms" 4.version_ms info
	row "4. \`faber status RUN\` of a finished $N-step run ≤ 50 ms ($PAIRS runs, $(span "$R.s" 1 1000 %.1f); $(calc %.1f "$(col 3 "$R.s" | median)")× \`faber version\`)" "$s ms" 4.status "$(pf "$s <= 50")"
	row "4. \`faber status --json RUN\` of it ≤ 50 ms ($(span "$R.j" 1 1000 %.1f); $(calc %.1f "$(col 3 "$R.j" | median)")× \`faber version\`)" "$sj ms" 4.status_json "$(pf "$sj <= 50")"
	row "4. \`faber list\` of $LIST runs ≤ 0.15 s ($PAIRS runs, $(span "$R.l" 1 1 %.3f); $(calc %.1f "$(col 3 "$R.l" | median)")× \`faber version\`)" "$l s" 4.list "$(pf "$l <= 0.15")"
	goal_end
}

for g in $GOALS; do
	case $g in
	1) goal1 ;;
	2) goal2 ;;
	3) goal3 ;;
	4) goal4 ;;
	*)
		say "bench: unknown goal $g (GOALS takes 1 2 3 4)"
		exit 2
		;;
	esac
done
