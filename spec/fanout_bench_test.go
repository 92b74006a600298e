package spec

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkParseFanOut parses a plan of one foreach: of 10,000 items and,
// for comparison, the same 10,000 steps listed. B/op is what the parse
// allocates; live-B/step what the parsed plan holds per step (item steps
// and the join, or the listed steps) after a collection.
//
//	go test -run '^$' -bench ParseFanOut -benchmem ./spec
func BenchmarkParseFanOut(b *testing.B) {
	const n = 10000
	listed := []byte("name: listed\nsteps:\n")
	for i := 1; i <= n; i++ {
		listed = fmt.Appendf(listed, "  - id: t%d\n    run: \"true\"\n", i)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"foreach", fmt.Appendf(nil, "name: fan\nsteps:\n  - id: t\n    foreach: {range: [1, %d]}\n    run: \"true\"\n", n)},
		{"listed", listed},
	} {
		b.Run(c.name, func(b *testing.B) {
			var live uint64
			var steps int
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				p, err := Parse("plan.yaml", c.data, Options{})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				steps = len(p.Steps)
				live += after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(p)
			}
			b.ReportMetric(float64(live)/float64(b.N)/float64(steps), "live-B/step")
		})
	}
}
