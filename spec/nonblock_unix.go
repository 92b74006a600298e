//go:build unix

package spec

import "syscall"

// oNonblock opens a FIFO without waiting for a writer (ReadPlanFile then
// refuses it): an open never blocks.
const oNonblock = syscall.O_NONBLOCK
