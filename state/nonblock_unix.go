//go:build unix

package state

import "syscall"

// oNonblock opens a FIFO without waiting for a writer (openRegular then
// refuses it): an open never blocks.
const oNonblock = syscall.O_NONBLOCK
