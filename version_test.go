package main

import (
	"runtime/debug"
	"testing"
)

// TestReadBuild: the release build's ldflags win; otherwise the module
// version and the VCS commit, time and dirty flag come from Go's build info.
func TestReadBuild(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name             string
		ver, com, dat    string
		bi               *debug.BuildInfo
		wantV, wantC, wD string
		mod              bool
	}{
		{"go install", "dev", "none", "unknown", vcs, "v1.4.0", "0123456789ab", "2026-11-20T10:00:00Z", true},
		{"release", "1.5.0", "fedcba987654", "2026-11-21", vcs, "1.5.0", "fedcba987654", "2026-11-21", true},
		{"devel, no vcs", "dev", "none", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "none", "unknown", false},
		{"no build info", "dev", "none", "unknown", nil, "dev", "none", "unknown", false},
	}
	for _, tt := range tests {
		b := readBuild(tt.ver, tt.com, tt.dat, tt.bi)
		if b.Version != tt.wantV || b.Commit != tt.wantC || b.Date != tt.wD || b.Modified != tt.mod {
			t.Errorf("%s: %+v", tt.name, b)
		}
	}
}
