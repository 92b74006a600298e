//go:build !linux && !darwin && !windows

package state

import (
	"io/fs"
	"syscall"
)

var noSpaceErrnos = errnoList{syscall.ENOSPC}

func freeSpace(path string) int64                  { return -1 }
func allocated(fi fs.FileInfo) int64               { return fi.Size() }
func preallocate(path string, size int64) error    { return nil }
func releaseTail(path string, off, end int64) bool { return off >= end }
