//go:build unix

package state

import (
	"os"
	"syscall"
)

// allocated is the disk space a file takes: its blocks, which for a sparse
// file are fewer than its length suggests.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
