//go:build !linux

package exec

import (
	"errors"
	osexec "os/exec"
)

// cgroup: only Linux has them; elsewhere a limit is recorded, not enforced.
type cgroup struct{}

func newCgroup(string, limits) (*cgroup, error) {
	return nil, errors.New("cgroups are Linux only")
}

func (*cgroup) prepare(*osexec.Cmd)      {}
func (*cgroup) wrap(a []string) []string { return a }
func (*cgroup) measure(*usage)           {}
func (*cgroup) remove()                  {}

// removeRunCgroups: no cgroups here.
func removeRunCgroups(string) []string { return nil }

// RemoveDeadCgroups: no cgroups here.
func RemoveDeadCgroups(func(string) bool) {}

// CgroupProbe: no cgroups here.
func CgroupProbe() error { return errors.New("cgroups are Linux only") }
