package exec

import (
	"math"
	osexec "os/exec"
	"strconv"
	"strings"
	"time"
)

// slurmMem writes a memory limit for srun's --mem: whole MiB, rounded up
// (Slurm's M is MiB).
func slurmMem(b int64) string {
	return strconv.FormatInt((b+(1<<20)-1)>>20, 10) + "M"
}

// slurmUsage fills in what a Slurm attempt used from Slurm's accounting
// (acct is slurmAcct outside tests): the largest MaxRSS of its job steps,
// their CPU time, and OUT_OF_MEMORY. A cluster without accounting storage
// says nothing, and the attempt keeps the figures of its srun process
// (source rusage), which are srun's own, not the job's.
func slurmUsage(job string, o *outcome, acct func(job string) string) {
	if o.startErr != nil {
		return
	}
	out := acct(job)
	var (
		peak      int64
		user, sys time.Duration
		seen      bool
	)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) < 5 {
			continue
		}
		seen = true
		state, maxRSS := f[1], f[2]
		if strings.HasPrefix(state, "OUT_OF_MEMORY") {
			o.use.oomKilled = true
		}
		if n, ok := slurmSize(maxRSS); ok && n > peak {
			peak = n
		}
		if strings.Contains(f[0], ".") { // job steps: the job's own line sums them
			continue
		}
		u, _ := slurmDuration(f[3])
		s, _ := slurmDuration(f[4])
		user, sys = u, s
	}
	if !seen {
		return
	}
	o.use.source = SourceSacct
	o.use.peakRSS, o.use.user, o.use.sys = peak, user, sys
}

// slurmAcct asks sacct about the job named job: one line per job and job
// step, JobID|State|MaxRSS|UserCPU|SystemCPU. Without sacct, or without
// accounting, it returns "".
func slurmAcct(job string) string {
	if _, err := osexec.LookPath("sacct"); err != nil {
		return ""
	}
	out, err := slurmCmd("sacct", append([]string{"--noheader", "--parsable2", "--name=" + job,
		"--format=JobID,State,MaxRSS,UserCPU,SystemCPU"}, slurmUser()...)...)
	if err != nil {
		return ""
	}
	return out
}

// slurmSize parses sacct's sizes: 1234K, 12.5M, 2G (binary units), or a
// bare number of bytes.
func slurmSize(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	mul := float64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mul = 1 << 10
	case 'M', 'm':
		mul = 1 << 20
	case 'G', 'g':
		mul = 1 << 30
	case 'T', 't':
		mul = 1 << 40
	}
	if mul != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(f * mul), true
}

// slurmDuration parses sacct's times: [D-][HH:]MM:SS[.mmm].
func slurmDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			return 0, false
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	secs, err := strconv.ParseFloat(parts[len(parts)-1], 64)
	if err != nil {
		return 0, false
	}
	total := time.Duration(secs * float64(time.Second))
	for i, mul := len(parts)-2, time.Minute; i >= 0; i, mul = i-1, mul*60 {
		n, err := strconv.ParseInt(parts[i], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(n) * mul
	}
	return total + time.Duration(days)*24*time.Hour, true
}
