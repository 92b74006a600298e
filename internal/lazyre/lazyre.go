// Package lazyre compiles a regular expression on its first use. faber
// starts for every command, and a package-level regexp.MustCompile runs at
// each start, whether the command needs it or not: the Slurm, classification
// and Torc patterns together took about 0.3 ms of every start.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern the first time it is called
// (panicking, as regexp.MustCompile does, if it does not compile) and
// returns that one *regexp.Regexp every time.
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
