package state

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMatchRunIDs(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"build-20261101T100000-aaaa", "build-20261101T100000-aaab", "build-20261102T090000-0001", "deploy-20261101T100000-ffff", "build"} {
		if err := os.MkdirAll(RunDir(dir, id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "runs", "build-file"), nil, 0o600) // not a run
	tests := []struct {
		ref  string
		want []string
	}{
		{"deploy", []string{"deploy-20261101T100000-ffff"}},
		{"build-20261101T100000-aaa", []string{"build-20261101T100000-aaaa", "build-20261101T100000-aaab"}},
		{"build-20261102", []string{"build-20261102T090000-0001"}},
		{"build", []string{"build"}}, // an exact id wins over the runs it prefixes
		{"nope", nil},
		{"../runs", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := MatchRunIDs(dir, tt.ref)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("MatchRunIDs(%q) = %v, %v; want %v", tt.ref, got, err, tt.want)
		}
	}
	if got, err := MatchRunIDs(filepath.Join(dir, "missing"), "b"); err != nil || got != nil {
		t.Errorf("no state dir: %v, %v", got, err)
	}
}
