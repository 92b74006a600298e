//go:build !linux

package state

import "os"

// fsyncCoversMmap: not relied upon outside Linux (Windows needs
// FlushViewOfFile for a mapping's pages); Badger's SyncWrites syncs there.
const fsyncCoversMmap = false

func fdatasync(f *os.File) error { return f.Sync() }
