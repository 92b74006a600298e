//go:build unix

package report

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// BenchmarkHistoryThousandRuns is faber report --plan --runs 1000 over
// 1,000 finished runs of a 50-step plan (issue 32: under 1 s): every run
// read from its summary and its events.jsonl of 101 events. It reports the
// CPU time per history too: on a shared machine the wall time says little.
func BenchmarkHistoryThousandRuns(b *testing.B) {
	dir := b.TempDir()
	writeRuns(b, dir, "p", 1000)
	var infos []exec.StepInfo
	for i := range 50 {
		infos = append(infos, exec.StepInfo{ID: fmt.Sprintf("s%d", i), Name: "s", Phase: "main", Needs: []string{}})
	}
	l := hist(b, infos...)
	for i := range 50 {
		l.try(fmt.Sprintf("s%d", i), 1, time.Duration(i)*time.Second, time.Duration(i+1)*time.Second, 0, "", exec.StatusSuccess,
			&exec.Resources{PeakRSSBytes: mib(5), MemoryLimitBytes: mib(200), TimeoutMs: 60000, Source: "cgroup", UserMs: 900, SysMs: 50})
	}
	ids, err := state.RunIDs(dir)
	must(b, err)
	for _, id := range ids { // the summaries do not stamp events.jsonl
		must(b, os.WriteFile(filepath.Join(state.RunDir(dir, id), "events.jsonl"), l.data(), 0o644))
	}
	var r0, r1 syscall.Rusage
	b.ResetTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for range b.N {
		h, err := LoadHistory(dir, "p", 1000, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(h.Runs) != 1000 || len(h.Steps) != 50 {
			b.Fatalf("%d runs, %d steps read, want 1000 and 50", len(h.Runs), len(h.Steps))
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	b.ReportMetric(float64(r1.Utime.Nano()-r0.Utime.Nano()+r1.Stime.Nano()-r0.Stime.Nano())/1e6/float64(b.N), "cpu-ms/op")
}
