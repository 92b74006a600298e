package importer_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/importer"
)

// BenchmarkTorcImport converts a Torc workflow of n jobs (importer.TorcChain:
// a chain by depends_on, files-based dependencies, a regex every 1000 jobs)
// and validates the plan, as faber import does. BENCH_TORC_N picks the
// sizes (default 10000 and 100000). It reports the peak heap (the largest
// HeapInuse seen by a sampler, MB) besides time.
func BenchmarkTorcImport(b *testing.B) {
	sizes := []int{10000, 100000}
	if s := os.Getenv("BENCH_TORC_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		sizes = []int{n}
	}
	for _, n := range sizes {
		data := importer.TorcChain(n)
		file := filepath.Join(b.TempDir(), "plan.yaml")
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				out, _, err := importer.Convert(importer.FormatTorc, "w.yaml", data, importer.Options{})
				if err != nil {
					b.Fatal(err)
				}
				p, err := spec.Parse(file, out, spec.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Steps) != n {
					b.Fatalf("%d steps, want %d", len(p.Steps), n)
				}
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.HeapSys)/1e6, "heap-sys-MB")
		})
	}
}
