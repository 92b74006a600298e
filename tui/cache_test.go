package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/evtest"
)

// TestCachedShownDistinctly: a cached step has its own glyph and word in
// the live view and its own count in the header; it counts as done; the
// plain renderer names the run it reuses.
func TestCachedShownDistinctly(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a", "b")...)
	f := map[string]any{"started_at": t0.Format(time.RFC3339Nano), "duration_ms": int64(0)}
	feed(m, status("a", exec.StatusCached, 0, f), status("b", exec.StatusSuccess, 1, f))
	v := m.View()
	if row := rowOf(t, v, "a"); !strings.Contains(row, "≡ a") || !strings.Contains(row, " cached ") {
		t.Errorf("cached row: %q", row)
	}
	if row := rowOf(t, v, "b"); !strings.Contains(row, "✓ b") {
		t.Errorf("success row: %q", row)
	}
	for _, want := range []string{"1 success", "1 cached", "2/2"} {
		if !strings.Contains(v, want) {
			t.Errorf("header lacks %q:\n%s", want, v)
		}
	}
	hit := evtest.Typed(exec.Event{Type: exec.EvStepCacheHit, StepID: "a", Time: t0},
		map[string]any{"cached_run_id": "p-1", "cached_attempt": 2, "cached_seq": 7, "key": "k"})
	miss := evtest.Typed(exec.Event{Type: exec.EvStepCacheMiss, StepID: "b", Time: t0},
		map[string]any{"reason": "input changed: data/a.csv"})
	s := NewStyles(false)
	if got := PlainLine(hit, s); !strings.Contains(got, "≡ a cache hit: run p-1 attempt 2 exited 0") {
		t.Errorf("hit: %q", got)
	}
	if got := PlainLine(miss, s); !strings.Contains(got, "b cache miss: input changed: data/a.csv") {
		t.Errorf("miss: %q", got)
	}
}
