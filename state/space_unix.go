//go:build linux || darwin

package state

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

var noSpaceErrnos = errnoList{syscall.ENOSPC, syscall.EDQUOT}

// freeSpace returns the bytes available to an unprivileged process on the
// file system holding path (what is reserved for root does not count: a
// step running as root may eat it, the rest of the world may not), or -1.
func freeSpace(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// allocated returns the space a file takes on disk (a sparse file takes less
// than its size).
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// zeroFill allocates [4096, size) of f by writing zeros, where the file
// system cannot allocate without writing. The first page holds the header
// Badger wrote; zeros are what the rest of a fresh file reads as anyway.
func zeroFill(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(4096); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}
