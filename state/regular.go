package state

import (
	"fmt"
	"io"
	"os"
)

// readRegular reads a file that must be a regular file (after symlinks) of
// at most max bytes. A FIFO, device or socket is an error naming the path,
// never a read that blocks or does not end; so is a bigger file.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d it may be", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s grew past the %d bytes it may be", path, max)
	}
	return b, err
}

// fileKind names what a non-regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a file"
}
