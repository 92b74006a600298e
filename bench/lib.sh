# bench/lib.sh: helpers shared by the bench scripts (sourced, not run).

# say writes progress to stderr; the tables go to stdout.
say() { printf '%s\n' "$*" >&2; }

# now_ns prints the wall clock in nanoseconds.
now_ns() { date +%s%N; }

# median reads numbers, one a line, and prints their median.
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# calc evaluates an awk expression with %.Nf formatting: calc FMT EXPR.
calc() { awk "BEGIN {printf \"$1\", $2}"; }

# pf prints PASS when the awk condition holds, else FAIL.
pf() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo FAIL; fi; }

# need_gnu_time makes sure /usr/bin/time (GNU time, for the peak RSS of the
# child it waits for) is there, installing it with apt-get when missing.
need_gnu_time() {
	[[ -x /usr/bin/time ]] && return
	say "installing GNU time (apt-get install time)"
	if ! { apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq time >/dev/null 2>&1; }; }; then
		say "bench: /usr/bin/time is missing and could not be installed; install GNU time"
		exit 1
	fi
}

# own_registry gives the faber runs of this script a registry of state dirs
# of their own, in the work dir (README "Every run at once"): the
# scripts' state dirs stay out of the user's own list (faber list --all,
# faber ui), and each run reads a registry of a few lines, as a user with a
# few projects has, rather than whatever the machine's registry has
# gathered (on the development machine, 700 lines left by test runs: 1.5 ms
# of every run's start). Needs WORK.
own_registry() {
	export XDG_STATE_HOME=$WORK/state-home
}

# work_with_faber NAME: a fresh work dir STATE_BASE/faber-NAME.XXXXXX (by
# default under bench/.work, in the repository), removed at exit unless
# KEEP=1, with faber in it (FABER_BIN copied, else built); sets WORK and
# FABER. Needs REPO.
work_with_faber() {
	mkdir -p "${STATE_BASE:=$REPO/bench/.work}"
	WORK=$(mktemp -d "$STATE_BASE/faber-$1.XXXXXX")
	if [[ ${KEEP:-} == 1 ]]; then
		trap 'say "work dir kept: $WORK"' EXIT
	else
		trap 'cd / && rm -rf "$WORK"' EXIT
	fi
	own_registry
	FABER=$WORK/faber
	if [[ -n ${FABER_BIN:-} ]]; then
		cp "$FABER_BIN" "$FABER"
	else
		build_faber "$FABER"
	fi
}

# load is the load average over 1, 5 and 15 minutes.
load() { cut -d' ' -f1-3 /proc/loadavg; }

# build_faber OUT builds faber as the release is built (.goreleaser.yaml:
# CGO_ENABLED=0, a static binary), so that the bench times what users run.
build_faber() {
	say "building faber (CGO_ENABLED=0, as the release)"
	(cd "$REPO" && CGO_ENABLED=0 go build -o "$1" .)
}

# make_runs DIR N fills the state dir DIR with N finished runs, each with
# its summary, for 'faber list' to read: BenchmarkList (list_bench_test.go,
# internal/runtest) makes them, copies of one real run, each with its own
# meta.json and summary, started a minute apart. Then it syncs, so that
# list is not timed against their writeback (one run measured 0.31 s that
# way, against 0.22 s after a sync). Needs REPO and WORK.
make_runs() {
	(cd "$REPO" && BENCH_LIST_N=$2 BENCH_LIST_DIR=$1 go test -run '^$' -bench '^BenchmarkList$' -benchtime 1x . >"$WORK/listbench.txt" 2>&1) || {
		say "building the runs for list failed:"
		cat "$WORK/listbench.txt" >&2
		exit 1
	}
	sync
}

# fstype DIR prints the type of the file system that holds DIR (ext4,
# tmpfs, ...), or nothing if DIR is not there.
fstype() { df -T "$1" 2>/dev/null | awk 'NR==2 {print $2}'; }

# readahead DIR prints the read-ahead of the block device that holds DIR
# ("8192 KiB"): "none" on tmpfs, "unknown" where no device is found (btrfs,
# network file systems). Badger maps its new files and writes their first
# page; the kernel then reads around that page, up to this much, which on a
# large setting costs milliseconds per run.
readahead() {
	local mm f
	if [[ $(fstype "$1") == tmpfs ]]; then
		echo none
		return
	fi
	mm=$(findmnt -n -o MAJ:MIN -T "$1" 2>/dev/null | tr -d ' ') || true
	f=/sys/dev/block/$mm/queue/read_ahead_kb
	[[ -r $f ]] || f=/sys/dev/block/$mm/../queue/read_ahead_kb
	if [[ -n $mm && -r $f ]]; then echo "$(cat "$f") KiB"; else echo unknown; fi
}

# create_cost DIR prints the microseconds one file creation takes in DIR now
# (500 empty files by one touch, kept until the end). On an ext4 without a
# journal it jumps after many deletions (see README.md), which moves faber's
# figures on disk and not the floor's.
# (It runs in a $(...) subshell: a fresh directory each time, by mktemp.)
create_cost() {
	local d t0 t1
	d=$(mktemp -d "$1/probe.XXXXXX")
	t0=$(now_ns)
	(cd "$d" && seq 500 | xargs touch)
	t1=$(now_ns)
	calc %.0f "($t1-$t0)/1e3/500"
}

# settle DIR: on an ext4 without a journal, creating a file right after many
# were deleted in the same block group is slow (ext4's recently_deleted()
# steps past every inode freed in the last 60 s, or 360 s while its inode
# table block is dirty; see README.md, "This VM's disk"): a bench run right
# after another's cleanup would time the floor against faber plus that
# cleanup. settle syncs, then waits while creating a file in DIR costs more
# than SETTLE_US µs, for at most SETTLE_S seconds. It sets SETTLE_COST (µs)
# and SETTLE_WAITED (s), and SETTLED, what the headings say of them.
SETTLE_US=${SETTLE_US:-80}
SETTLE_S=${SETTLE_S:-120}
SETTLE_STEP=${SETTLE_STEP:-15}
settle() {
	local dir=$1 c first waited=0
	sync
	first=$(create_cost "$dir")
	c=$first
	while ((c > SETTLE_US && waited < SETTLE_S)); do
		say "disk: creating a file in $dir takes $c µs (recent deletions); waiting for it to settle"
		sleep "$SETTLE_STEP"
		waited=$((waited + SETTLE_STEP))
		c=$(create_cost "$dir")
	done
	SETTLE_COST=$c SETTLE_WAITED=$waited
	SETTLED="creating a file took $c µs before the rounds"
	if ((waited > 0)); then
		SETTLED+=", after waiting $waited s for recent deletions to settle ($first µs at first)"
	fi
}

# faber_label: which faber a script measures, for its heading: FABER_BIN
# with its version line, else the repository's commit (REPO), said to have
# uncommitted changes outside bench/ when it has, built as the release is.
# FABER is the binary being measured.
faber_label() {
	if [[ -n ${FABER_BIN:-} ]]; then
		echo "$FABER_BIN ($("$FABER" version | head -1))"
		return
	fi
	local c
	c=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[[ -z $(git -C "$REPO" status --porcelain -- . ':!bench' 2>/dev/null) ]] || c+=" (with uncommitted changes)"
	echo "$c, built as the release"
}
