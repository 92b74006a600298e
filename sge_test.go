package main

import (
	"fmt"
	osexec "os/exec"
	"strings"
	"time"
)

// waitSGEIdle waits until the Grid Engine test cluster has no job of this
// user (queued, running or ending), so that each Grid Engine script starts
// on an idle cluster, as waitSlurmIdle does for Slurm.
func waitSGEIdle() error {
	const sgeIdleWait = 90 * time.Second
	deadline := time.Now().Add(sgeIdleWait)
	for {
		// qstat without -u lists the caller's jobs, and nothing at all
		// when there are none.
		out, err := osexec.Command("qstat").Output()
		if err != nil {
			return fmt.Errorf("qstat: %v", err)
		}
		jobs := strings.TrimSpace(string(out))
		if jobs == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Grid Engine cluster is still busy after %s:\n%s", sgeIdleWait, jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
