#!/usr/bin/env bash
# sge-cluster.sh: a throwaway single-host Grid Engine cluster on this host,
# for faber's Grid Engine tests (testdata/script/sge_*.txtar) and for trying
# `executor: sge` without a real cluster.
#
#   scripts/sge-cluster.sh start    install (when missing), configure, start, wait until a job runs
#   scripts/sge-cluster.sh status   the daemons and `qstat -f`
#   scripts/sge-cluster.sh stop     stop the daemons (the directory is kept for its logs)
#
# Everything lives in $FABER_SGE_DIR (default /tmp/faber-sge), which is the
# cluster's SGE_ROOT: the cell's bootstrap, configuration and accounting
# file, classic (flat file) spooling, pid and log files. Nothing under /etc
# is changed and no system service is started: the daemons run directly
# (containers often have no systemd), as root. Clients find the cluster
# through SGE_ROOT, SGE_CELL and the ports (Debian's /usr/bin/q* wrappers
# honour them); `start` ends by printing
#
#   export SGE_ROOT=/tmp/faber-sge SGE_CELL=default SGE_QMASTER_PORT=16444 SGE_EXECD_PORT=16445
#
# so `eval "$(scripts/sge-cluster.sh start)"` sets them; progress goes to
# stderr. Then run the Grid Engine tests with
#
#   FABER_SGE=1 go test -run 'TestScripts/sge_' .
#
# Runs as root. Needs the Debian packages gridengine-master, gridengine-exec
# and gridengine-client (Son of Grid Engine 8.1.9 on Debian 12); it installs
# them with apt-get when they are missing (10 to 30 s), answering
# debconf's questions so that the packages set up no cluster of their own.
#
# The cluster: one host (this one, `hostname`, which must resolve; its
# address's reverse name, "localhost" here, is made an alias of it), queue
# all.q with max(nproc, 8) slots, parallel environment smp ($pe_slots: all
# of a job's slots on one host; `qsub -pe smp 4`), root allowed to submit
# (min_uid/min_gid 0, on this cluster only), the scheduler every second and
# one second after each submission and each job's end, no load thresholds
# and no load adjustments (jobs start at once, many in the same second),
# shell_start_mode unix_behavior (a job script runs with its #! line's
# interpreter), accounting records written as soon as a job ends
# (accounting_flush_time 0), a notify time of 5 s (qdel of a -notify job:
# SIGUSR2, SIGKILL 5 s later) and no mail. A job starts about a second
# after qsub; `start` takes about 5 s once the packages are there. The
# daemons log to $DIR/spool/qmaster/messages and
# $DIR/spool/execd/<host>/messages.
#
# What Grid Engine does here (SGE 8.1.9, measured on this cluster; what an
# executor for it has to know):
#
# - Submission. `qsub -terse` prints the job id alone ("12"; an array job
#   "12.1-3:1"). A job runs in the submitter's home directory unless -cwd or
#   -wd DIR, and relative -o/-e paths are relative to it. `-b y` runs a
#   binary with its arguments joined by spaces, quoting lost (`-b y sh -c
#   'exit 7'` runs `sh -c exit 7`, exit 0): submit a script (a file, or on
#   stdin). `-N` rejects ':' and '@' (qsub exits 1, "Unable to run job:
#   Colon (':') not allowed in objectname"); the rejected submission still
#   uses up a job id. `-sync y` waits and exits with the job's exit code.
#   Root may submit only because min_uid/min_gid are 0 here (a stock cluster
#   rejects uid 0: min_uid 1000).
# - qacct -j ID: one block per run (per task for arrays) of "key value"
#   lines after a line of '=' signs, among them jobname, jobnumber, taskid
#   ("undefined" for a plain job, else the task number), qsub_time,
#   start_time, end_time ("Fri Nov 27 13:51:43 2026": whole seconds),
#   granted_pe ("NONE" or "smp"), slots, failed, exit_status, ru_wallclock
#   ("6s"), ru_maxrss ("4.578KB"), cpu, maxvmem ("3.375MB"; "0.000B" for a
#   job that ends before the execd's first sample), category (the -l/-pe
#   requests: "-l h_rt=5"). failed is "0" or a code and a reason ("37  :
#   qmaster enforced h_rt, h_cpu, or h_vmem limit"); exit_status is the
#   code, then for a signal its name: "137 (Killed)". An id it has no record
#   of: exit 1, "error: job id 42 not found" (on stderr).
# - When the record appears: a job leaves qstat when its execd reports its
#   end (a `sleep 1` job: ~2 s after qsub); with accounting_flush_time 0
#   (this cluster) its qacct record is there at once (within 50 ms in every
#   trial). With the stock setting (flush_time 15 s, no
#   accounting_flush_time) it came 10-12 s after the job left qstat: sites
#   keep that, so retry qacct for at least flush_time + a few seconds.
# - Exit codes. exit 3: "failed 0", "exit_status 3". Two codes are traps:
#   exit 99 re-queues the job (qstat "Rq", then it runs again: 3 runs in 20
#   s here, on until qdel) with a qacct record per run, "failed 25  :
#   rescheduling", "exit_status 99"; exit 100 leaves the job in qstat in
#   state "Eqw" until qdel, qacct "failed 30  : application error returned",
#   "exit_status 100". A job script must remap 99 and 100 and keep the real
#   code elsewhere (a file) for faber.
# - Killed from outside SGE (kill -9 / kill -TERM of the job's process):
#   "failed 100 : assumedly after job", exit_status 137 (Killed) / 143
#   (Terminated).
# - qdel of a running job: SIGKILL at once (no SIGTERM); qacct "failed 100 :
#   assumedly after job", "exit_status 137 (Killed)" -- the same as a kill
#   -9 from outside, so faber must remember that it asked. With qsub
#   -notify: SIGUSR2 first, SIGKILL the queue's notify time later. qdel adds
#   no qacct record for a job that is not running: one deleted while queued
#   (qw, hqw) has none at all; one in Eqw or Rq keeps only its past runs'.
#   qdel of an unknown id: exit 1, 'denied: job "42" does not exist'.
# - h_rt (-l h_rt=0:0:5): SIGKILL only (no warning signal), up to about a
#   second late: "failed 37  : qmaster enforced h_rt, h_cpu, or h_vmem
#   limit", "exit_status 137 (Killed)", ru_wallclock 6s. Do not add s_rt
#   (SIGUSR1 as a warning): with s_rt=3,h_rt=8, a job that survived the
#   SIGUSR1 was never killed at h_rt (it ran past 25 s); one that did not
#   trap it died of it: "failed 100", exit_status 138 (SIGUSR1).
# - h_vmem (-l h_vmem=100M) is an address-space limit (setrlimit): a program
#   allocating more gets an allocation failure (Python: MemoryError) and
#   exits as it likes; qacct "failed 0", exit_status the job's own.
# - qstat (no -u: only the caller's jobs; -u '*': everybody's) prints
#   nothing when there are no jobs, else two header lines ("job-ID  prior
#   name user state submit/start at queue slots ja-task-ID", dashes) and a
#   line per job (per running array task; an array's pending tasks on one
#   line, "1-3:1" or "3,4" in ja-task-ID): states r, qw, hqw, Rq
#   (re-queued), Eqw (error), dr (being deleted), t. `qstat -xml` always
#   prints a document (with empty lists when there are no jobs): <job_info>
#   holds <queue_info> with the running jobs (<job_list state="running">)
#   then <job_info> with the pending ones
#   (<job_list state="pending">), each with <JB_job_number>, <JAT_prio>,
#   <JB_name>, <JB_owner>, <state> (r, qw, Eqw, Rq, ...), <JAT_start_time>
#   (running) or <JB_submission_time> ("2026-11-27T13:51:43"), <queue_name>
#   ("all.q@vm"; empty when pending), <slots>, and <tasks> for array tasks
#   ("2", "3,4"). `qstat -j ID` exits 1 once the job has left ("Following
#   jobs do not exist").
#
# Ports of their own (16444/16445), so that a system Grid Engine on the
# usual ones (6444/6445) does not get in the way.
set -euo pipefail

DIR=${FABER_SGE_DIR:-/tmp/faber-sge}
CELL=default
QMASTER_PORT=${FABER_SGE_QMASTER_PORT:-16444}
EXECD_PORT=${FABER_SGE_EXECD_PORT:-16445}
LIB=/usr/lib/gridengine

say() { echo "sge-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

env_line() {
	echo "export SGE_ROOT=$DIR SGE_CELL=$CELL SGE_QMASTER_PORT=$QMASTER_PORT SGE_EXECD_PORT=$EXECD_PORT"
}

# The clients and daemons of this cluster.
export SGE_ROOT=$DIR SGE_CELL=$CELL SGE_QMASTER_PORT=$QMASTER_PORT SGE_EXECD_PORT=$EXECD_PORT

install_packages() {
	if [ -x $LIB/sge_qmaster ] && [ -x $LIB/sge_execd ] && command -v qsub >/dev/null; then
		return
	fi
	say "installing gridengine-master, gridengine-exec and gridengine-client"
	# No cluster of the packages' own (shared/gridengineconfig false): this
	# script makes its own in $DIR.
	debconf-set-selections <<EOF
gridengine-common shared/gridengineconfig boolean false
gridengine-common shared/gridenginecell string default
gridengine-common shared/gridenginemaster string $(hostname)
EOF
	# The packages' init scripts would start a qmaster and an execd for a
	# cluster that does not exist (failing the install) and an exim; where
	# no policy-rc.d forbids service starts (containers usually have one),
	# one does for the time of the install.
	local policy=/usr/sbin/policy-rc.d ours=
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\n# scripts/sge-cluster.sh: no service starts while it installs.\nexit 101\n' >$policy
		chmod 755 $policy
		ours=1
	fi
	# Bounded: a broken mirror must fail, not hang CI.
	export DEBIAN_FRONTEND=noninteractive
	local rc=0
	timeout 300 apt-get update -q >&2 || say "apt-get update failed; trying the install anyway"
	timeout 600 apt-get install -y -q --no-install-recommends gridengine-master gridengine-exec gridengine-client >&2 || rc=$?
	[ -z "$ours" ] || rm -f $policy
	[ $rc = 0 ] || die "apt-get install gridengine-master gridengine-exec gridengine-client failed"
}

host() { hostname; }

alive() { # alive PID: that process runs (a zombie does not)
	kill -0 "$1" 2>/dev/null || return 1
	[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

pid_of() { # pid_of NAME: the pid in NAME's pid file, if that process runs
	local f p
	case $1 in
	qmaster) f=$DIR/spool/qmaster/qmaster.pid ;;
	# The execd's spool directory is named as the execd names its host,
	# which may be the alias ("localhost").
	execd) f=$(ls "$DIR"/spool/execd/*/execd.pid 2>/dev/null | head -n 1) ;;
	esac
	[ -s "$f" ] || return 1
	p=$(cat "$f")
	alive "$p" || return 1
	echo "$p"
}

# stop_daemons: SIGTERM to both daemons at once (each takes seconds to end:
# qmaster about 6 s), SIGKILL to what still runs 10 s later.
stop_daemons() {
	local n p pids="" running _
	for n in execd qmaster; do
		if p=$(pid_of $n); then pids="$pids $p"; fi
	done
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086 # one pid per word
	kill -TERM $pids 2>/dev/null || true
	for _ in $(seq 100); do
		running=""
		for p in $pids; do
			if alive "$p"; then running=1; fi
		done
		[ -n "$running" ] || break
		sleep 0.1
	done
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null || true
	done
}

stop() {
	[ -d "$DIR" ] || return 0
	# The cluster's jobs first, so that none is left running as an orphan.
	if pid_of qmaster >/dev/null; then
		timeout 10 qdel -f -u '*' >/dev/null 2>&1 || true
	fi
	stop_daemons
	# sge_shepherd processes (and their jobs) of jobs that were still running.
	kill_shepherds
	say "stopped (logs in $DIR)"
}

# kill_shepherds kills the process groups of this cluster's sge_shepherd
# processes: they inherit SGE_ROOT from this cluster's execd.
kill_shepherds() {
	local p pid c
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = sge_shepherd ] || continue
		if tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SGE_ROOT=$DIR"; then
			pid=${p#/proc/}
			# Each job runs in a session and process group of its own,
			# a child of its shepherd.
			for c in $(pgrep -P "$pid"); do
				kill -KILL -- "-$c" 2>/dev/null || kill -KILL "$c" 2>/dev/null || true
			done
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

write_cell() {
	local h rev common=$DIR/$CELL/common
	h=$(host)
	getent hosts "$h" >/dev/null || die "the hostname $h does not resolve (add it to /etc/hosts)"
	mkdir -p "$common" "$DIR/spool/qmaster/job_scripts" "$DIR/spool/execd" "$DIR/templates/pe" "$DIR/templates/hosts"
	# SGE_ROOT's binaries are Debian's.
	local d
	for d in bin lib utilbin; do
		mkdir -p "$DIR/$d"
		ln -sfn $LIB "$DIR/$d/lx-amd64"
		ln -sfn $LIB "$DIR/$d/$(/usr/share/gridengine/util/arch)"
	done
	ln -sfn /usr/share/gridengine/util "$DIR/util"
	cat >"$common/bootstrap" <<EOF
# Written by scripts/sge-cluster.sh: a throwaway single-host cluster.
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         $common;$DIR/spool/qmaster
binary_path             $LIB
qmaster_spool_dir       $DIR/spool/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
EOF
	echo "$h" >"$common/act_qmaster"
	echo faber >"$common/cluster_name"
	# The daemons see this host's connections come from its address, whose
	# reverse name (127.0.0.1: "localhost") is not the hostname: one host.
	rev=$(getent hosts "$(getent hosts "$h" | awk '{print $1; exit}')" | awk '{print $2; exit}')
	if [ -n "$rev" ] && [ "$rev" != "$h" ]; then
		echo "$h $rev" >"$common/host_aliases"
	else
		echo "$h localhost" >"$common/host_aliases"
	fi
	sed -e "s|^execd_spool_dir .*|execd_spool_dir        $DIR/spool/execd|" \
		-e 's|^mailer .*|mailer                 /bin/true|' \
		-e 's|^shell_start_mode .*|shell_start_mode       unix_behavior|' \
		-e 's|^min_uid .*|min_uid                0|' \
		-e 's|^min_gid .*|min_gid                0|' \
		-e 's|^load_report_time .*|load_report_time       00:00:05|' \
		-e 's|^loglevel .*|loglevel               log_info|' \
		-e 's|^reporting_params .*|reporting_params       accounting=true reporting=false flush_time=00:00:01 joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00|' \
		/usr/share/gridengine/default-configuration >"$DIR/templates/global"
	cp /usr/share/gridengine/util/resources/pe/smp "$DIR/templates/pe/smp"
	printf 'hostname %s\n' "$h" >"$DIR/templates/hosts/$h"
	local sd=$LIB/spooldefaults
	{
		$sd configuration "$DIR/templates/global"
		$sd complexes /usr/share/gridengine/util/resources/centry
		$sd usersets /usr/share/gridengine/util/resources/usersets
		$sd pes "$DIR/templates/pe"
		$sd managers root
		$sd adminhosts "$DIR/templates/hosts"
		$sd submithosts "$DIR/templates/hosts"
	} >&2 || die "spooldefaults failed"
}

# configure: the scheduler, the queue and the host, once qmaster answers.
configure() {
	local h slots f=$DIR/templates
	h=$(host)
	slots=$(nproc)
	[ "$slots" -ge 8 ] || slots=8
	qconf -ssconf | sed \
		-e 's|^schedule_interval .*|schedule_interval                 0:0:1|' \
		-e 's|^flush_submit_sec .*|flush_submit_sec                  1|' \
		-e 's|^flush_finish_sec .*|flush_finish_sec                  1|' \
		-e 's|^job_load_adjustments .*|job_load_adjustments              NONE|' \
		-e 's|^load_adjustment_decay_time .*|load_adjustment_decay_time        0:0:0|' \
		>"$f/sconf"
	qconf -Msconf "$f/sconf" >&2
	cat >"$f/all.q" <<EOF
qname                 all.q
hostlist              $h
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               smp
rerun                 FALSE
slots                 $slots
tmpdir                /tmp
shell                 /bin/sh
prolog                NONE
epilog                NONE
shell_start_mode      unix_behavior
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:05
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  INFINITY
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY
EOF
	qconf -Aq "$f/all.q" >&2
}

wait_qmaster() {
	local _
	for _ in $(seq 120); do
		timeout 5 qstat >/dev/null 2>&1 && return
		sleep 0.5
	done
	say "qmaster does not answer"
	tail -n 20 "$DIR/spool/qmaster/messages" >&2 || true
	exit 1
}

# wait_job: a job is accepted, runs and ends with its exit code.
wait_job() {
	local rc=0
	(cd /tmp && echo 'exit 7' | timeout 120 qsub -sync y -N faber-probe -o /dev/null -e /dev/null >/dev/null 2>&1) || rc=$?
	if [ "$rc" != 7 ]; then
		say "a probe job did not run (qsub -sync y: exit $rc, want 7)"
		qstat -f >&2 || true
		tail -n 20 "$DIR/spool/qmaster/messages" "$DIR"/spool/execd/*/messages >&2 || true
		exit 1
	fi
}

start() {
	[ "$(id -u)" = 0 ] || die "run as root: the daemons run as root (jobs run as whoever submits them)"
	install_packages
	if pid_of qmaster >/dev/null && pid_of execd >/dev/null; then
		say "already running"
		wait_qmaster
		wait_job
		env_line
		return
	fi
	stop 2>/dev/null # leftovers of an earlier start
	# What an earlier start wrote (no more: $FABER_SGE_DIR may hold more).
	rm -rf "${DIR:?}/$CELL" "$DIR/spool" "$DIR/templates" "$DIR/bin" "$DIR/lib" "$DIR/utilbin" "$DIR/util"
	write_cell
	$LIB/sge_qmaster || die "sge_qmaster did not start; see $DIR/spool/qmaster/messages"
	wait_qmaster
	configure
	$LIB/sge_execd || die "sge_execd did not start; see $DIR/spool/execd/*/messages"
	wait_job
	say "up"
	qstat -f >&2
	env_line
}

status() {
	local n p
	for n in qmaster execd; do
		if p=$(pid_of $n); then echo "sge_$n: running (pid $p)"; else echo "sge_$n: not running"; fi
	done
	if pid_of qmaster >/dev/null; then timeout 10 qstat -f || true; fi
	env_line
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*)
	echo "usage: $0 start|stop|status" >&2
	exit 2
	;;
esac
