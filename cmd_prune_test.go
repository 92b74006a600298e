package main

import (
	"testing"
	"time"
)

func TestHumanAgeAndBytes(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                 "0s",
		42 * time.Second:             "42s",
		17*time.Minute + time.Second: "17m",
		47 * time.Hour:               "47h",
		49 * time.Hour:               "2d",
		10 * 24 * time.Hour:          "10d",
	} {
		if got := humanAge(d); got != want {
			t.Errorf("humanAge(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 57300: "57.3 kB",
		1_200_000: "1.2 MB", 3_400_000_000: "3.4 GB", 5e15: "5000.0 TB",
	} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
