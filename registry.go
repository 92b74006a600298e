package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/faber-run/faber/internal/registry"
)

// registryPath is where the registry of state dirs is, or "" when it is
// off (FABER_REGISTRY=off, or no usable home directory).
func registryPath() string {
	p, err := registry.Locate(os.Getenv, runtime.GOOS)
	if err != nil {
		return ""
	}
	return p
}

// rememberStateDir registers the state dir for 'faber list --all' and
// 'faber ui'. It never fails a run: a problem is one warning with -v,
// otherwise nothing.
func rememberStateDir(g *Globals) {
	p := registryPath()
	if p == "" {
		return
	}
	if err := registry.Remember(p, g.StateDir, time.Now()); err != nil && g.Verbose {
		fmt.Fprintf(g.stderr, "faber: warning: cannot register the state dir in %s: %v\n", p, err)
	}
}

// knownStateDirs are the state dirs 'faber list --all' and 'faber ui'
// read: every registered one that still holds runs, and the current one,
// first. A registry that cannot be read is passed to warn.
func knownStateDirs(g *Globals, warn func(string)) []string {
	dirs := []string{g.StateDir}
	seen := map[string]bool{g.StateDir: true}
	p := registryPath()
	if p == "" {
		return dirs
	}
	entries, err := registry.Read(p)
	if err != nil {
		warn(fmt.Sprintf("cannot read the registry of state dirs: %v", err))
	}
	for _, e := range entries {
		if !seen[e.Dir] && registry.Usable(e.Dir) {
			seen[e.Dir] = true
			dirs = append(dirs, e.Dir)
		}
	}
	return dirs
}

// forgetStateDirs is what every prune does to the registry: it drops the
// dirs in forget and those that no longer hold runs. It returns the dirs
// dropped.
func forgetStateDirs(forget map[string]bool) ([]string, error) {
	p := registryPath()
	if p == "" {
		return nil, nil
	}
	dropped, err := registry.Rewrite(p, func(e registry.Entry) bool {
		return !forget[e.Dir] && registry.Usable(e.Dir)
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return dropped, err
}

// shortDir abbreviates a state dir under the home directory with ~.
func shortDir(dir string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == string(filepath.Separator) {
		return dir
	}
	if dir == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(dir, home+string(filepath.Separator)); ok {
		return "~" + string(filepath.Separator) + rest
	}
	return dir
}
