//go:build unix

package exec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSlurmWaitEndsOnHardStop: a stopped Slurm attempt waits (bounded, 45
// s) for its job to leave the queue, so that no step runs twice at once;
// a hard stop (a second Ctrl-C) ends that wait at once. A fake squeue
// that always lists the job stands for a controller slow to let it go.
func TestSlurmWaitEndsOnHardStop(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '42 faber-r-s-a1'\n"
	if err := os.WriteFile(filepath.Join(bin, "squeue"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	keep := func(_, name string) bool { return name == "faber-r-s-a1" }

	hard := make(chan struct{})
	done := make(chan struct{})
	go func() {
		waitGone(keep, hard)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("waitGone returned while the job was still queued and nothing stopped it")
	case <-time.After(500 * time.Millisecond):
	}
	close(hard)
	// Generous: the wait would otherwise last slurmGoneWait (45 s).
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("waitGone went on waiting after a hard stop")
	}
}
