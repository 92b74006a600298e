//go:build unix

package regfile

import "syscall"

// oNonblock opens a FIFO without waiting for a writer (Open then
// refuses it): an open never blocks.
const oNonblock = syscall.O_NONBLOCK
