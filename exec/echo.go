package exec

import (
	"bytes"
	"fmt"
	"os"
	"time"
)

// The echo of a local process's output (plain progress, the live view): the
// process writes to its log files itself, as `cmd > file` would, never
// slowed by faber; faber reads the lines back from the files while it runs
// (every echoPoll) and once more when it ends, before its end is recorded.
// A process that writes faster than echoBudget per poll has the excess
// skipped in the echo, said once per stream with the log file's path: the
// log file always has every byte.

const (
	echoPoll   = 100 * time.Millisecond
	echoBudget = 32 << 10 // bytes of one stream echoed per poll, at most
	echoChunk  = 64 << 10
)

type fileEcho struct {
	onLine  func(stream string, line []byte)
	streams [2]*echoStream
	buf     []byte
}

type echoStream struct {
	name, path string
	f          *os.File
	off        int64
	lines      LineSplitter
	skipped    int64
	said       bool
}

func newFileEcho(onLine func(string, []byte), out, errf *os.File, outPath, errPath string) *fileEcho {
	return &fileEcho{onLine: onLine, streams: [2]*echoStream{
		{name: "stdout", path: outPath, f: out},
		{name: "stderr", path: errPath, f: errf},
	}}
}

// read hands on what the files gained since the last read; final hands on
// a last line without its newline too.
func (e *fileEcho) read(final bool) {
	for _, s := range e.streams {
		e.readStream(s, final)
	}
}

func (e *fileEcho) readStream(s *echoStream, final bool) {
	fi, err := s.f.Stat()
	if err != nil {
		return
	}
	size := fi.Size()
	if size > s.off+echoBudget {
		// More than the echo can show: skip to the last part, from a line
		// start, and say so once.
		skip := size - echoBudget/2
		s.lines.Reset()
		if e.buf == nil {
			e.buf = make([]byte, echoChunk)
		}
		if n, _ := s.f.ReadAt(e.buf[:min(int64(len(e.buf)), size-skip)], skip); n > 0 {
			if i := bytes.IndexByte(e.buf[:n], '\n'); i >= 0 {
				skip += int64(i + 1)
			}
		}
		s.skipped += skip - s.off
		s.off = skip
		if !s.said {
			s.said = true
			e.onLine(s.name, []byte(fmt.Sprintf("… faber: this %s is written faster than it can be shown here; parts are skipped in this view, every byte is in %s", s.name, s.path)))
		}
	}
	for s.off < size {
		if e.buf == nil {
			e.buf = make([]byte, echoChunk)
		}
		n, err := s.f.ReadAt(e.buf[:min(int64(len(e.buf)), size-s.off)], s.off)
		if n > 0 {
			s.off += int64(n)
			s.lines.Write(e.buf[:n], func(l []byte) { e.onLine(s.name, l) })
		}
		if err != nil || n == 0 {
			break
		}
	}
	if final {
		s.lines.Flush(func(l []byte) { e.onLine(s.name, l) })
	}
}

// LineSplitter cuts a byte stream into lines, as the runner and every
// follower of a log hand them on (without "\n" or "\r\n"); a
// line longer than 64 KiB is handed on in pieces. Each line is a copy.
type LineSplitter struct {
	partial []byte
	split   bool // the current line was handed on in pieces already
}

func (l *LineSplitter) Write(chunk []byte, emit func([]byte)) {
	for {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			l.partial = append(l.partial, chunk...)
			if len(l.partial) > 64<<10 { // a very long line: hand it on in pieces
				emit(l.partial)
				l.partial, l.split = nil, true
			}
			return
		}
		line := chunk[:i]
		if len(l.partial) > 0 {
			line = append(l.partial, line...)
			l.partial = nil
		}
		// The end of a line handed on in pieces is no line of its own.
		if !l.split || len(line) > 0 {
			emit(bytes.Clone(bytes.TrimSuffix(line, []byte("\r"))))
		}
		l.split = false
		chunk = chunk[i+1:]
	}
}

// flush hands on a last line that has no newline.
func (l *LineSplitter) Flush(emit func([]byte)) {
	if len(l.partial) > 0 {
		emit(l.partial)
	}
	l.partial, l.split = nil, false
}

func (l *LineSplitter) Reset() { l.partial, l.split = nil, false }
