// Package regfile opens files that faber reads only when they are regular
// files (plans, cache entries, inputs, result files, lines: files): a FIFO,
// a device or a socket, or a symlink to one, is refused at once, never
// read, so that no read waits for a writer or never ends.
package regfile

import (
	"io/fs"
	"os"
)

// NotRegular is Open's error for a file that is not a regular file.
type NotRegular struct {
	Mode fs.FileMode
}

func (e *NotRegular) Error() string { return "not a regular file (" + Kind(e.Mode) + ")" }

// Open opens path for reading without waiting (a FIFO opens at once) and
// returns it with its FileInfo. A file that is not regular is closed again
// and the error is a *NotRegular.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegular{Mode: fi.Mode()}
	}
	return f, fi, nil
}

// Kind names what a file that is not regular is: a FIFO, a socket, a
// device, a directory.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a file"
}
