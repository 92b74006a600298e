//go:build !unix

package state

import "os"

// allocated is the disk space a file takes; here, its length.
func allocated(fi os.FileInfo) int64 { return fi.Size() }
