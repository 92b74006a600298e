package main

// BenchmarkList measures 'faber list' over a state dir of many finished runs
// (BENCH_LIST_N, default 10,000), every one with its summary: the whole
// listing, and --limit 20. The runs are copies of one real run (made through
// package state, so its summary is the real one), each with its own
// meta.json and summary; its store's files are hard links. bench/run.sh
// builds its state dir with it (BENCH_LIST_DIR keeps the dir):
//
//	BENCH_LIST_N=10000 go test -run '^$' -bench '^BenchmarkList$' -benchtime 1x .

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/runtest"
)

func BenchmarkList(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BENCH_LIST_N")); err == nil && v > 0 {
		n = v
	}
	dir := os.Getenv("BENCH_LIST_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err != nil {
		t0 := time.Now()
		runtest.MakeRuns(b, dir, n, time.Now().Add(-time.Duration(n)*time.Minute))
		b.Logf("%d runs made in %v", n, time.Since(t0).Round(time.Millisecond))
	}
	for _, c := range []struct {
		name  string
		limit int
	}{{"all", 0}, {"limit20", 20}} {
		b.Run(c.name, func(b *testing.B) {
			g := &Globals{StateDir: dir, stdout: io.Discard, stderr: io.Discard}
			for range b.N {
				if err := (&ListCmd{Limit: c.limit}).Run(g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/list")
		})
	}
}
