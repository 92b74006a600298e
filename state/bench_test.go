package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRun2k replays the store traffic of a 2,000-step run as faber makes
// it (per step: in_progress with its event, the process group record, the
// final status with its event) and closes the store, which flushes the
// memtable into a table. It reports the time per run and the bytes the run
// directory keeps per step (logs aside; Badger's DISCARD file is sparse and
// left out). bench/run.sh measures the same on the real binary.
func BenchmarkRun2k(b *testing.B) {
	const steps = 2000
	var bytesPerStep float64
	for range b.N {
		dir := b.TempDir()
		s, err := Create(dir, Meta{RunID: "bench-20260101T000000-abcd", Plan: "bench"}, []byte("name: bench\n"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var seq int64
		for i := range steps {
			id := fmt.Sprintf("s%d", i)
			at := t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
			rec := func(status, extra string) []byte {
				return fmt.Appendf(nil, `{"id":%q,"name":%q,"phase":"p","status":%q,"attempt":1,"exit_code":null,"error":"","started_at":%q,"finished_at":null,"duration_ms":0,"needs":[],"remediation":null,"hash":"4f1c2a9be0d3%s"%s}`, id, id, status, at, id, extra)
			}
			event := func(status string) Event {
				seq++
				return Event{Seq: seq, JSON: fmt.Appendf(nil, `{"seq":%d,"time":%q,"type":"step_status","run_id":"bench-20260101T000000-abcd","step_id":%q,"attempt":1,"status":%q,"phase":"p","started_at":%q}`, seq, at, id, status, at)}
			}
			changes := []Change{
				{Steps: map[string][]byte{id: rec("in_progress", "")}, Events: []Event{event("in_progress")}},
				{Steps: map[string][]byte{id: rec("in_progress", `,"pgid":12345,"pstart":"987654"`)}},
				{Steps: map[string][]byte{id: rec("success", "")}, Events: []Event{event("success")}},
			}
			for _, c := range changes {
				if err := s.Commit(c); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		var size int64
		err = filepath.Walk(RunDir(dir, "bench-20260101T000000-abcd"), func(path string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && fi.Name() != "DISCARD" {
				size += fi.Size()
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		bytesPerStep = float64(size) / steps
	}
	b.ReportMetric(bytesPerStep, "B/step")
}
