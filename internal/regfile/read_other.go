//go:build !linux

package regfile

import "os"

// Reader is a regular file open for reading, opened by OpenReader.
type Reader struct{ *os.File }

// OpenReader opens path for reading as Open does (without waiting, refused
// with a *NotRegular unless a regular file) and returns its size.
func OpenReader(path string) (*Reader, int64, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, 0, err
	}
	return &Reader{f}, fi.Size(), nil
}
