#!/usr/bin/env bash
# bench/run.sh: faber's orchestration overhead next to the process-spawn floor.
#
# Builds faber, generates plans of N independent `true` steps (one parallel
# phase) and a chain of CHAIN steps (top-level steps, sequential), and runs them
# with faber (--ui plain and --ui json, output to /dev/null) and with the floor
# (seq N | xargs -P J -n 1 sh -c true; a shell loop of sh -c true) in the same
# round, alternating, REPS times. Then the scale checks: validate, run, status
# and resume of big plans. Prints markdown tables on stdout; progress on stderr.
#
# The comparison runs with the state dir in up to three places: on disk in the
# repository (where a project's .faber would be), on disk under TMPDISK (/tmp:
# on a machine whose test suites create and delete files there all day,
# creating a file there can cost ten times more), and on tmpfs.
#
#   bash bench/run.sh                       # defaults: N=2000 J=8 CHAIN=300 REPS=3
#   N=1000 REPS=5 bash bench/run.sh
#   SCALE="" TMPDISK="" TMPFS="" bash bench/run.sh   # only the repository's disk
#
# Environment:
#   N           steps of the parallel plan (2000)
#   J           --jobs for faber and -P for xargs (8)
#   CHAIN       steps of the chain (300)
#   REPS        rounds; figures are medians over them (3, at least 3 advised)
#   SCALE       plan sizes of the scale section ("1000 5000 10000"); the largest
#               is also used for validate, status and resume
#   STATE_BASE  where the work dir (binary, plans, the "disk" state dirs) goes
#               (default: bench/.work in the repository)
#   TMPDISK     a second disk directory to compare ("/tmp"; empty skips it)
#   TMPFS       a tmpfs to compare ("/dev/shm"; empty skips it)
#   LIST        runs in the state dir that 'faber list' reads (10000; empty skips it)
#   SETTLE_US   before the rounds on the repository's disk (and goal 1's),
#               wait while creating a file there costs more than this (80 µs):
#               recent deletions slow an ext4 without a journal (lib.sh, settle)
#   SETTLE_S    the longest wait, in seconds (120; 0 never waits)
#   KEEP        1 keeps the work dirs
set -euo pipefail

N=${N:-2000}
J=${J:-8}
CHAIN=${CHAIN:-300}
REPS=${REPS:-3}
SCALE=${SCALE-1000 5000 10000}
LIST=${LIST-10000}
TMPFS=${TMPFS-/dev/shm}
TMPDISK=${TMPDISK-/tmp}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=lib.sh
source "$REPO/bench/lib.sh"
need_gnu_time

mkdir -p "${STATE_BASE:=$REPO/bench/.work}"
# On ext4, mark the base as the top of a directory hierarchy, so that each
# run's work dir below it is placed in a block group of its own (as ext4
# places directories made at the root) rather than next to its parent: the
# last bench run's cleanup freed a quarter of a million inodes next to it,
# and on an ext4 without a journal every creation there would step past
# them for up to six minutes (see settle). Nothing else changes.
chattr +T "$STATE_BASE" 2>/dev/null || true
WORK=$(mktemp -d "$STATE_BASE/faber-bench.XXXXXX")
own_registry
TMPFS_DIR=
TMPDISK_DIR=
cleanup() {
	if [[ ${KEEP:-} == 1 ]]; then
		say "work dirs kept: $WORK $TMPDISK_DIR $TMPFS_DIR"
	else
		rm -rf "$WORK" ${TMPDISK_DIR:+"$TMPDISK_DIR"} ${TMPFS_DIR:+"$TMPFS_DIR"}
		# Write the deletions back now: on an ext4 without a journal a
		# deleted inode slows the creations after it for 60 s once its
		# inode table block is written, 360 s while it is dirty (see
		# settle).
		sync
	fi
}
trap cleanup EXIT
if [[ -n $TMPFS ]]; then
	if [[ $(fstype "$TMPFS") == tmpfs ]] && TMPFS_DIR=$(mktemp -d "$TMPFS/faber-bench.XXXXXX"); then
		:
	else
		say "bench: $TMPFS is not a writable tmpfs; skipping the tmpfs comparison"
		TMPFS=
	fi
fi
if [[ -n $TMPDISK ]]; then
	if [[ $(fstype "$TMPDISK") != tmpfs ]] && TMPDISK_DIR=$(mktemp -d "$TMPDISK/faber-bench.XXXXXX"); then
		:
	else
		say "bench: $TMPDISK is not a writable directory on disk; skipping that comparison"
		TMPDISK=
	fi
fi

FABER=$WORK/faber
build_faber "$FABER"

# ---------------------------------------------------------------- helpers

gen_par() { # gen_par N [FAIL_MARKER]: N independent steps; the last fails once if a marker path is given
	local n=$1 marker=${2:-}
	printf 'name: par%d\nphases:\n  - name: p\n    parallel: true\n    steps:\n' "$n"
	if [[ -z $marker ]]; then
		seq "$n" | awk '{printf "      - {id: s%d, run: \"true\"}\n", $1}'
	else
		seq $((n - 1)) | awk '{printf "      - {id: s%d, run: \"true\"}\n", $1}'
		printf '      - {id: s%d, run: "test -e %s || { touch %s; exit 1; }"}\n' "$n" "$marker" "$marker"
	fi
}

gen_chain() { # gen_chain N: N sequential steps
	printf 'name: chain%d\nsteps:\n' "$1"
	seq "$1" | awk '{printf "  - {id: s%d, run: \"true\"}\n", $1}'
}

# fresh_dir BASE sets FRESH to a new, unused state dir under BASE. Nothing is deleted
# until the end: on an ext4 file system without a journal (this VM's), creating
# an inode right after many were deleted scans past the recently deleted ones
# (ext4's recently_deleted()), which would make each run pay for the cleanup of
# the one before it.
SEQ=0
fresh_dir() {
	SEQ=$((SEQ + 1))
	FRESH=$1/st$SEQ
}

# run_faber OUT BASE UI PLAN [ARGS...]: runs faber once in a fresh state dir
# under BASE; appends "seconds rss_kb apparent_bytes allocated_bytes" to OUT.
run_faber() {
	local out=$1 st ui=$3 plan=$4
	fresh_dir "$2"
	st=$FRESH
	shift 4
	local tf=$WORK/time.txt t0 t1 rc=0
	t0=$(now_ns)
	/usr/bin/time -f '%M' -o "$tf" "$FABER" --state-dir "$st" run "$plan" --ui "$ui" "$@" >/dev/null 2>"$WORK/stderr.txt" || rc=$?
	t1=$(now_ns)
	if [[ $rc -ne 0 ]]; then
		say "faber run $plan exited $rc:"
		cat "$WORK/stderr.txt" >&2
		exit 1
	fi
	local dir
	dir=$(echo "$st"/runs/*)
	echo "$(calc %.4f "($t1-$t0)/1e9") $(tail -1 "$tf") $(du -sb --exclude=logs "$dir" | cut -f1) $(du -s -B1 --exclude=logs "$dir" | cut -f1)" >>"$out"
}

# run_floor OUT CMD: times a floor command; appends seconds to OUT.
run_floor() {
	local out=$1 t0 t1
	t0=$(now_ns)
	bash -c "$2" >/dev/null
	t1=$(now_ns)
	calc '%.4f\n' "($t1-$t0)/1e9" >>"$out"
}

col() { awk -v c="$1" '{print $c}' "$2"; }

# ---------------------------------------------------------------- machine

CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
FS=$(fstype "$WORK")
say "machine: $(nproc) CPUs ($CPU), load $LOAD_START, work dir on $FS"

PAR=$WORK/par.yaml
CH=$WORK/chain.yaml
TINY=$WORK/tiny.yaml
gen_par "$N" >"$PAR"
gen_chain "$CHAIN" >"$CH"
gen_chain 3 >"$TINY"

FLOOR_PAR="seq $N | xargs -P $J -n 1 sh -c true"
FLOOR_CHAIN="for i in \$(seq $CHAIN); do sh -c true; done"

# ---------------------------------------------------------------- rounds

# Per-round ratios, paired with the floor of the same round, then the median.
ratio() { paste -d' ' <(col 1 "$1") "$2" | awk '{print $1/$2}' | median; }

# compare NAME BASE WHERE: REPS rounds with state dirs under BASE, then the
# table, headed "State dir WHERE".
# Sets PAR_RATIO_<NAME>, CHAIN_RATIO_<NAME>, PAR_RSS_<NAME>, TINY_RSS_<NAME>,
# PAR_ALLOC_<NAME>.
compare() {
	local name=$1 base=$2 where=$3 R=$WORK/results/$1 rep probe
	mkdir -p "$R" "$base"
	if [[ $name == disk ]]; then
		# The repository's disk, where a project's .faber would be: measured
		# settled. /tmp is the column that shows a churned directory.
		settle "$base"
		probe=$SETTLED
	else
		probe="creating a file took $(create_cost "$base") µs before the rounds"
	fi
	for rep in $(seq "$REPS"); do
		say "$name: round $rep/$REPS"
		# Alternate the order so that drift in the machine's load hits both sides.
		if ((rep % 2)); then
			run_floor "$R/par.floor" "$FLOOR_PAR"
			run_faber "$R/par.plain" "$base" plain "$PAR" --jobs "$J"
			run_faber "$R/par.json" "$base" json "$PAR" --jobs "$J"
			run_floor "$R/chain.floor" "$FLOOR_CHAIN"
			run_faber "$R/chain.plain" "$base" plain "$CH"
			run_faber "$R/chain.json" "$base" json "$CH"
		else
			run_faber "$R/par.json" "$base" json "$PAR" --jobs "$J"
			run_faber "$R/par.plain" "$base" plain "$PAR" --jobs "$J"
			run_floor "$R/par.floor" "$FLOOR_PAR"
			run_faber "$R/chain.json" "$base" json "$CH"
			run_faber "$R/chain.plain" "$base" plain "$CH"
			run_floor "$R/chain.floor" "$FLOOR_CHAIN"
		fi
		run_faber "$R/tiny.plain" "$base" plain "$TINY"
	done

	echo "### State dir $where ($(fstype "$base"); $probe; read-ahead $(readahead "$base"))"
	echo
	echo "| plan | runner | wall s | floor s | ratio | overhead ms/step | peak RSS MB | state B/step-attempt (apparent / allocated) |"
	echo "|---|---|---|---|---|---|---|---|"
	row() { # row LABEL KIND UI STEPS
		local f=$R/$2.$3 fl=$R/$2.floor
		local w fm r rss app alloc
		w=$(col 1 "$f" | median)
		fm=$(median <"$fl")
		r=$(ratio "$f" "$fl")
		rss=$(col 2 "$f" | median)
		app=$(col 3 "$f" | median)
		alloc=$(col 4 "$f" | median)
		echo "| $1 | faber --ui $3 | $(calc %.2f "$w") | $(calc %.2f "$fm") | $(calc %.2f "$r") | $(calc %.2f "($w-$fm)*1000/$4") | $(calc %.1f "$rss/1024") | $(calc %.0f "$app/$4") / $(calc %.0f "$alloc/$4") |"
	}
	row "$N independent, --jobs $J (floor: xargs -P $J)" par plain "$N"
	row "$N independent, --jobs $J (floor: xargs -P $J)" par json "$N"
	row "chain of $CHAIN (floor: shell loop)" chain plain "$CHAIN"
	row "chain of $CHAIN (floor: shell loop)" chain json "$CHAIN"
	local tiny
	tiny=$(col 2 "$R/tiny.plain" | median)
	echo "| 3 steps, sequential | faber --ui plain | $(calc %.2f "$(col 1 "$R/tiny.plain" | median)") | | | | $(calc %.1f "$tiny/1024") | |"
	echo
	printf -v "PAR_RATIO_$name" '%s' "$(ratio "$R/par.plain" "$R/par.floor")"
	printf -v "CHAIN_RATIO_$name" '%s' "$(ratio "$R/chain.plain" "$R/chain.floor")"
	printf -v "PAR_RSS_$name" '%s' "$(col 2 "$R/par.plain" | median)"
	printf -v "TINY_RSS_$name" '%s' "$tiny"
	printf -v "PAR_ALLOC_$name" '%s' "$(calc %.0f "$(col 4 "$R/par.plain" | median)/$N")"
}

echo "## faber vs the process-spawn floor"
echo
echo "$(nproc) CPUs, $CPU; load average at start $LOAD_START; N=$N J=$J CHAIN=$CHAIN REPS=$REPS; medians, ratios are medians of each round's faber/floor."
echo
NAMES=disk
compare disk "$WORK/disk" "on disk, in the repository"
if [[ -n $TMPDISK ]]; then
	NAMES+=" tmp"
	compare tmp "$TMPDISK_DIR" "on disk, in $TMPDISK"
fi
if [[ -n $TMPFS ]]; then
	NAMES+=" tmpfs"
	compare tmpfs "$TMPFS_DIR" "on tmpfs"
fi

# ---------------------------------------------------------------- scale

if [[ -n $SCALE ]]; then
	say "scale: ${SCALE}"
	R=$WORK/results/scale
	mkdir -p "$R"
	BIG=0
	for n in $SCALE; do ((n > BIG)) && BIG=$n; done
	echo "## Scale (state dir on disk, in the repository)"
	echo
	echo "| steps | faber run --jobs $J --ui json, s | ms/step | peak RSS MB |"
	echo "|---|---|---|---|"
	for n in $SCALE; do
		plan=$WORK/scale$n.yaml
		fresh_dir "$WORK/disk"
		st=$FRESH
		want=0
		if ((n == BIG)); then
			# The biggest plan's last step fails once (a marker file), so that
			# its run can be resumed below with all other steps done.
			gen_par "$n" "$WORK/marker" >"$plan"
			BIGST=$st
			want=1
		else
			gen_par "$n" >"$plan"
		fi
		t0=$(now_ns)
		rc=0
		/usr/bin/time -f '%M' -o "$WORK/time.txt" "$FABER" --state-dir "$st" run "$plan" --ui json --jobs "$J" >/dev/null 2>"$WORK/stderr.txt" || rc=$?
		t1=$(now_ns)
		if [[ $rc -ne $want ]]; then
			say "scale run of $n steps exited $rc, want $want:"
			cat "$WORK/stderr.txt" >&2
			exit 1
		fi
		echo "| $n | $(calc %.2f "($t1-$t0)/1e9") | $(calc %.3f "($t1-$t0)/1e6/$n") | $(calc %.1f "$(tail -1 "$WORK/time.txt")/1024") |"
	done
	echo

	# validate, and status of the finished (failed) run, medians of REPS.
	RUN=$(basename "$(echo "$BIGST"/runs/*)")
	for _ in $(seq "$REPS"); do
		run_floor "$R/validate" "'$FABER' validate '$WORK/scale$BIG.yaml'"
		run_floor "$R/status" "'$FABER' --state-dir '$BIGST' status '$RUN'"
		run_floor "$R/statusjson" "'$FABER' --state-dir '$BIGST' status --json '$RUN'"
	done
	VALIDATE=$(median <"$R/validate")
	STATUS=$(median <"$R/status")
	STATUSJ=$(median <"$R/statusjson")

	# resume: the last step's second attempt. Its in_progress event carries the
	# time of its commit, which comes right before its process starts.
	t0=$(now_ns)
	rc=0
	/usr/bin/time -f '%M' -o "$WORK/time.txt" "$FABER" --state-dir "$BIGST" resume "$RUN" --ui json --jobs "$J" >"$WORK/resume.jsonl" 2>"$WORK/stderr.txt" || rc=$?
	t1=$(now_ns)
	if [[ $rc -ne 0 ]]; then
		say "resume exited $rc:"
		cat "$WORK/stderr.txt" >&2
		exit 1
	fi
	RESUME_RSS=$(tail -1 "$WORK/time.txt")
	ts=$(grep -F "\"step_id\":\"s$BIG\"" "$WORK/resume.jsonl" | grep -F '"status":"in_progress"' | head -1 | sed 's/.*"time":"\([^"]*\)".*/\1/')
	START_MS=$(calc %.0f "($(date -d "$ts" +%s%N)-$t0)/1e6")
	RESUME_S=$(calc %.2f "($t1-$t0)/1e9")
	dir=$BIGST/runs/$RUN
	BIG_APP=$(calc %.0f "$(du -sb --exclude=logs "$dir" | cut -f1)/($BIG+1)")
	BIG_ALLOC=$(calc %.0f "$(du -s -B1 --exclude=logs "$dir" | cut -f1)/($BIG+1)")

	echo "| $BIG-step run | |"
	echo "|---|---|"
	echo "| faber validate | $(calc %.3f "$VALIDATE") s |"
	echo "| faber status | $(calc %.3f "$STATUS") s |"
	echo "| faber status --json | $(calc %.3f "$STATUSJ") s |"
	echo "| faber resume ($((BIG - 1)) done): the last step in_progress after | $START_MS ms |"
	echo "| faber resume, whole | $RESUME_S s, peak RSS $(calc %.1f "$RESUME_RSS/1024") MB |"
	echo "| state after resume, B/step-attempt (apparent / allocated) | $BIG_APP / $BIG_ALLOC |"
	echo
fi

# ---------------------------------------------------------------- list

if [[ -n $LIST ]]; then
	say "list: building $LIST finished runs"
	R=$WORK/results/list
	mkdir -p "$R"
	LISTST=$WORK/disk/list
	make_runs "$LISTST" "$LIST"
	"$FABER" --state-dir "$LISTST" list >/dev/null # warm the cache, as a second list would be
	for _ in $(seq "$REPS"); do
		run_floor "$R/all" "'$FABER' --state-dir '$LISTST' list"
		run_floor "$R/limit" "'$FABER' --state-dir '$LISTST' list --limit 20"
	done
	LIST_S=$(calc %.3f "$(median <"$R/all")")
	LIMIT_MS=$(calc %.0f "$(median <"$R/limit")*1000")
	echo "## list (state dir on disk, in the repository; every run finished, with its summary)"
	echo
	echo "list $LIST runs: $LIST_S s (goal ≤ 0.3 s) $(pf "$LIST_S <= 0.3")"
	echo
	echo "list --limit 20: $LIMIT_MS ms (goal ≤ 50 ms) $(pf "$LIMIT_MS <= 50")"
	echo
fi

# ---------------------------------------------------------------- goals

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
mark() { if awk "BEGIN {exit !($1)}"; then echo "met"; else echo "**missed**"; fi; }
# goal TEXT FMT UNIT VAR DIV COND: one row, a column per file system; COND
# applies to the figure as shown (VAR/DIV, rounded by FMT).
goal() {
	local fmt=$2 unit=$3 var=$4 div=$5 cond=$6 line="| $1 |" n v
	for n in $NAMES; do
		v=${var}_$n
		v=$(calc "$fmt" "${!v}/$div")
		line+=" $v$unit, $(mark "$v $cond") |"
	done
	echo "$line"
}
echo "## Goals"
echo
head="| goal |"
sep="|---|"
for n in $NAMES; do
	case $n in
	disk) head+=" state on disk (repository) |" ;;
	tmp) head+=" state on disk ($TMPDISK) |" ;;
	*) head+=" state on $n |" ;;
	esac
	sep+="---|"
done
echo "$head"
echo "$sep"
goal "$N independent, --jobs $J ≤ 1.5× xargs -P $J" %.2f × PAR_RATIO 1 "<= 1.5"
goal "chain of $CHAIN ≤ 2× a shell loop" %.2f × CHAIN_RATIO 1 "<= 2"
goal "peak RSS ≤ 150 MB for $N steps" %.1f " MB" PAR_RSS 1024 "<= 150"
goal "peak RSS ≤ 40 MB for 3 steps" %.1f " MB" TINY_RSS 1024 "<= 40"
goal "state ≤ 2 KB per step attempt (allocated, logs aside)" %.0f " B" PAR_ALLOC 1 "<= 2048"
if [[ -n $SCALE ]]; then
	pad=""
	for n in $NAMES; do [[ $n == disk ]] || pad+=" |"; done
	VALIDATE=$(calc %.3f "$VALIDATE")
	STATUS=$(calc %.3f "$STATUS")
	echo "| validate $BIG steps < 0.5 s | $VALIDATE s, $(mark "$VALIDATE < 0.5") |$pad"
	echo "| status of a $BIG-step run < 0.5 s | $STATUS s, $(mark "$STATUS < 0.5") |$pad"
	echo "| resume: the last of $BIG steps starts < 1 s | $START_MS ms, $(mark "$START_MS < 1000") |$pad"
fi
echo
echo "Load average at the end: $LOAD_END."
echo
if [[ ${GOALS19-1} == 1 ]]; then
	# shellcheck source=goals19.sh
	source "$REPO/bench/goals19.sh"
fi
