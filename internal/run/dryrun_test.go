package run

import (
	"testing"
	"time"
)

func TestShortDur(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{2 * time.Second, "2s"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		if got := ShortDur(tt.d); got != tt.want {
			t.Errorf("ShortDur(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
