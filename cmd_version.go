package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the release build (-ldflags "-X main.version=... -X main.commit=...
// -X main.date=..."); otherwise Go's build info tells (go install, go build
// in a clone).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// buildInfo is what faber knows of its own build.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Date     string `json:"date"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuild merges the release build's ldflags with Go's build info: the
// module version (go install module@version, or the version Go derives from
// the VCS in a clone) and the VCS commit, time and dirty flag.
func readBuild(ldVersion, ldCommit, ldDate string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Commit: ldCommit, Date: ldDate, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "none" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "unknown" {
				b.Date = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if len(b.Commit) > 12 {
		b.Commit = b.Commit[:12]
	}
	return b
}

// currentBuild is this binary's build.
func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return readBuild(version, commit, date, bi)
}

// String is the one line of faber --version and faber version.
func (b buildInfo) String() string {
	dirty := ""
	if b.Modified {
		dirty = ", modified"
	}
	return fmt.Sprintf("faber %s (commit %s%s, built %s, %s %s)", b.Version, b.Commit, dirty, b.Date, b.Go, b.Platform)
}

// VersionCmd prints the version.
type VersionCmd struct {
	JSON bool `name:"json" help:"Print {version, commit, date, modified, go, platform} as JSON."`
}

// Help explains version.
func (c *VersionCmd) Help() string {
	return `Prints faber's version, the commit it was built from and the build date (from
the release build, else from Go's build info).

Examples:
  faber version
  faber version --json | jq -r .version`
}

// Run prints version, commit and build date.
func (c *VersionCmd) Run(g *Globals) error {
	b := currentBuild()
	if c.JSON {
		out, _ := json.Marshal(b)
		_, err := fmt.Fprintln(g.stdout, string(out))
		return err
	}
	_, err := fmt.Fprintln(g.stdout, b)
	return err
}
