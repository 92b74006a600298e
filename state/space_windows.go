package state

import (
	"io/fs"
	"syscall"
)

// ERROR_HANDLE_DISK_FULL and ERROR_DISK_FULL.
var noSpaceErrnos = errnoList{syscall.Errno(39), syscall.Errno(112)}

// Windows maps Badger's files in full when it creates them, so a full disk
// is an error there, never a fault: nothing needs reserving ahead.

func freeSpace(path string) int64                  { return -1 }
func allocated(fi fs.FileInfo) int64               { return fi.Size() }
func preallocate(path string, size int64) error    { return nil }
func releaseTail(path string, off, end int64) bool { return off >= end }
