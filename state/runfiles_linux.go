package state

import (
	"errors"

	"golang.org/x/sys/unix"
)

// runFiles reads the small files of one run directory and checks stamps
// there through a descriptor of the directory: each file is one path
// component from it, where a full path costs a lookup of every component
// of the state dir's path again. A listing of 10,000 runs checks six
// stamps of each.
// A listing opens the runs directory once and reads each run by the two
// components "<run-id>/<name>" from there (in).
type runFiles struct {
	fd     int
	prefix string
}

func openRunFiles(dir string) (runFiles, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return runFiles{fd: fd}, err
	}
}

// in is the directory sub of r (closed with r).
func (r runFiles) in(sub string) runFiles { return runFiles{r.fd, r.prefix + sub + "/"} }

func (r runFiles) close() { unix.Close(r.fd) }

// read reads a small file (see readSmall) into buf, growing it if need be.
func (r runFiles) read(name string, buf []byte) ([]byte, error) {
	fd, err := unix.Openat(r.fd, r.prefix+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readFD(fd, buf)
}

// matches reports whether name is a regular file with the stamp's size
// and modification time.
func (r runFiles) matches(f FileStamp) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(r.fd, r.prefix+f.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == f.Size && st.Mtim.Nano() == f.MTime
}

func readFD(fd int, buf []byte) ([]byte, error) {
	return readToShort(buf, func(b []byte) (int, error) { return unix.Read(fd, b) })
}
