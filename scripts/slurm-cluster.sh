#!/usr/bin/env bash
# slurm-cluster.sh: a throwaway single-node Slurm cluster on this host, for
# faber's Slurm tests (testdata/script/slurm_*.txtar) and for trying
# `executor: slurm` without a real cluster.
#
#   scripts/slurm-cluster.sh start    install (when missing), configure, start, wait until idle
#   scripts/slurm-cluster.sh status   the daemons and `sinfo`
#   scripts/slurm-cluster.sh stop     stop the daemons (the directory is kept for its logs)
#
# Everything lives in $FABER_SLURM_DIR (default /tmp/faber-slurm): slurm.conf,
# a munge key and socket of its own, state, spool, pid and log files. Nothing
# under /etc is changed and no system service is started: the daemons run
# directly (containers often have no systemd), as root. Clients find the
# cluster through SLURM_CONF; `start` ends by printing
#
#   export SLURM_CONF=/tmp/faber-slurm/slurm.conf
#
# so `eval "$(scripts/slurm-cluster.sh start)"` sets it; progress goes to
# stderr. Then run the Slurm tests with
#
#   FABER_SLURM=1 go test -run 'TestScripts/slurm_' .
#
# Runs as root. Needs the Debian packages slurm-wlm and munge (Slurm 22.05 on
# Debian 12); it installs them with apt-get when they are missing.
set -euo pipefail

DIR=${FABER_SLURM_DIR:-/tmp/faber-slurm}
CONF=$DIR/slurm.conf
# Ports of their own, so that a system slurmctld/slurmd on the usual ports
# (6817/6818) does not get in the way.
CTLD_PORT=${FABER_SLURM_CTLD_PORT:-16817}
SLURMD_PORT=${FABER_SLURM_SLURMD_PORT:-16818}

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

install_packages() {
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v srun >/dev/null && command -v munged >/dev/null; then
		return
	fi
	say "installing slurm-wlm and munge"
	# Bounded: a broken mirror must fail, not hang CI.
	export DEBIAN_FRONTEND=noninteractive
	timeout 300 apt-get update -q >&2 || say "apt-get update failed; trying the install anyway"
	timeout 600 apt-get install -y -q --no-install-recommends slurm-wlm munge >&2 ||
		die "apt-get install slurm-wlm munge failed"
}

pid_of() { # pid_of NAME: the pid in NAME's pid file, if that process runs
	local f=$DIR/$1.pid p
	[ -s "$f" ] || return 1
	p=$(cat "$f")
	kill -0 "$p" 2>/dev/null || return 1
	echo "$p"
}

stop_daemon() { # stop_daemon NAME
	local p _
	p=$(pid_of "$1") || return 0
	kill -TERM "$p" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		kill -KILL "$p" 2>/dev/null || true
	fi
	rm -f "$DIR/$1.pid"
}

stop() {
	[ -d "$DIR" ] || return 0
	# The cluster's jobs first, so that none is left running as an orphan.
	local ids
	if pid_of slurmctld >/dev/null && [ -f "$CONF" ]; then
		ids=$(SLURM_CONF=$CONF timeout 10 squeue --noheader --format=%i 2>/dev/null || true)
		if [ -n "$ids" ]; then
			# shellcheck disable=SC2086 # one job id per word
			SLURM_CONF=$CONF timeout 10 scancel --full $ids 2>/dev/null || true
		fi
	fi
	stop_daemon slurmd
	stop_daemon slurmctld
	stop_daemon munged
	# slurmstepd processes of jobs that were still running.
	pkill_steps
	say "stopped (logs in $DIR)"
}

# pkill_steps kills the slurmstepd processes of this cluster's slurmd: their
# command line names only the job, so match the SLURM_CONF they inherit.
pkill_steps() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
		if tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$CONF"; then
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
}

write_conf() {
	local host cpus
	host=$(hostname -s)
	# At least 8 CPUs, whatever the machine has (config_overrides below):
	# every job takes one, and test scripts run in parallel.
	cpus=$(nproc)
	[ "$cpus" -ge 8 ] || cpus=8
	cat >"$CONF" <<EOF
# Written by scripts/slurm-cluster.sh: a throwaway single-node cluster.
ClusterName=faber
SlurmctldHost=$host
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
SlurmdParameters=config_overrides
# A canceled or timed-out job gets SIGTERM, then SIGKILL this many seconds later.
KillWait=5
# Completed jobs leave the controller soon.
MinJobAge=10
InactiveLimit=0
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# Memory is scheduled (not enforced): a job takes 1 MB unless it asks with
# --mem, so a job of "urgent" that asks for most of the node's 1000 MB
# preempts (cancels) the "debug" job that holds it, and no other. faber's
# tests use it to see a preempted step.
DefMemPerCPU=1
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=$host MaxTime=INFINITE State=UP PriorityTier=10
EOF
}

start_munge() {
	mkdir -p "$DIR/munge"
	chmod 700 "$DIR/munge"
	if [ ! -s "$DIR/munge/munge.key" ]; then
		if command -v mungekey >/dev/null; then
			mungekey --create --keyfile="$DIR/munge/munge.key" --force
		else
			dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
		fi
	fi
	chmod 600 "$DIR/munge/munge.key"
	munged --force \
		--socket="$DIR/munge/munge.socket" \
		--key-file="$DIR/munge/munge.key" \
		--pid-file="$DIR/munged.pid" \
		--log-file="$DIR/munged.log" \
		--seed-file="$DIR/munge/munged.seed" ||
		die "munged did not start; see $DIR/munged.log"
	local _
	for _ in $(seq 50); do
		munge -n --socket="$DIR/munge/munge.socket" 2>/dev/null | unmunge --socket="$DIR/munge/munge.socket" >/dev/null 2>&1 && return
		sleep 0.1
	done
	die "munge does not work; see $DIR/munged.log"
}

wait_idle() {
	local _ state
	for _ in $(seq 120); do
		state=$(SLURM_CONF=$CONF timeout 5 sinfo -h -o %t 2>/dev/null || true)
		case $state in
		idle*) return ;;
		esac
		sleep 0.5
	done
	say "the node did not become idle (sinfo: ${state:-no answer})"
	tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmd.log" >&2 || true
	exit 1
}

start() {
	[ "$(id -u)" = 0 ] || die "run as root: the daemons run as root (jobs run as whoever submits them)"
	install_packages
	if pid_of slurmctld >/dev/null; then
		say "already running"
		wait_idle
		echo "export SLURM_CONF=$CONF"
		return
	fi
	stop 2>/dev/null # leftovers of an earlier start
	rm -rf "$DIR/state" "$DIR/spool"
	mkdir -p "$DIR/state" "$DIR/spool"
	write_conf
	start_munge
	# -c: start from an empty state (no jobs of an earlier cluster).
	export SLURM_CONF=$CONF
	slurmctld -c -f "$CONF" || die "slurmctld did not start; see $DIR/slurmctld.log"
	slurmd -f "$CONF" || die "slurmd did not start; see $DIR/slurmd.log"
	wait_idle
	say "up"
	SLURM_CONF=$CONF sinfo >&2
	echo "export SLURM_CONF=$CONF"
}

status() {
	local n
	for n in munged slurmctld slurmd; do
		if p=$(pid_of $n); then echo "$n: running (pid $p)"; else echo "$n: not running"; fi
	done
	if pid_of slurmctld >/dev/null; then SLURM_CONF=$CONF timeout 10 sinfo || true; fi
	echo "export SLURM_CONF=$CONF"
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
