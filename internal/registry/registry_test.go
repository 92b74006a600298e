package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLocate(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(home, "nope")
	file := filepath.Join(home, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		goos string
		want string // "" : ErrOff
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": home}, "linux", "/x/state/faber/state-dirs"},
		{"xdg wins on macOS", map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": home}, "darwin", "/x/state/faber/state-dirs"},
		{"relative xdg ignored", map[string]string{"XDG_STATE_HOME": "rel", "HOME": home}, "linux", filepath.Join(home, ".local/state/faber/state-dirs")},
		{"linux home", map[string]string{"HOME": home}, "linux", filepath.Join(home, ".local/state/faber/state-dirs")},
		{"bsd home", map[string]string{"HOME": home}, "freebsd", filepath.Join(home, ".local/state/faber/state-dirs")},
		{"macOS", map[string]string{"HOME": home}, "darwin", filepath.Join(home, "Library/Application Support/faber/state-dirs")},
		{"windows", map[string]string{"LocalAppData": `C:\Users\u\AppData\Local`}, "windows", filepath.Join(`C:\Users\u\AppData\Local`, "faber", "state-dirs")},
		{"windows without LocalAppData", map[string]string{}, "windows", ""},
		{"off", map[string]string{"FABER_REGISTRY": "off", "XDG_STATE_HOME": "/x"}, "linux", ""},
		{"OFF", map[string]string{"FABER_REGISTRY": "OFF", "HOME": home}, "linux", ""},
		{"no home", map[string]string{}, "linux", ""},
		{"home missing", map[string]string{"HOME": missing}, "linux", ""},
		{"home a file", map[string]string{"HOME": file}, "linux", ""},
		{"relative home", map[string]string{"HOME": "rel"}, "linux", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(env(tt.env), tt.goos)
			if tt.want == "" {
				if !errors.Is(err, ErrOff) {
					t.Fatalf("Locate = %q, %v; want ErrOff", got, err)
				}
				return
			}
			if err != nil || got != filepath.FromSlash(tt.want) && got != tt.want {
				t.Fatalf("Locate = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, ".local")); err == nil {
		t.Error("Locate created a directory; it must only compute the path")
	}
}

func TestRememberOncePerDay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "st", "faber", "state-dirs")
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.Local)
	for _, at := range []time.Time{day, day.Add(time.Hour), day.Add(5 * time.Hour)} {
		if err := Remember(path, "/a/.faber", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remember(path, "/b/.faber", day); err != nil {
		t.Fatal(err)
	}
	if n := lines(t, path); n != 2 {
		t.Fatalf("%d lines after three registrations of one dir on one day and one of another; want 2", n)
	}
	if err := Remember(path, "/a/.faber", day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := lines(t, path); n != 3 {
		t.Fatalf("%d lines; a new day writes one more", n)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Dir != "/a/.faber" || !got[0].Seen.Equal(day.Add(24*time.Hour)) || got[1].Dir != "/b/.faber" {
		t.Fatalf("Read = %+v; want /a (latest seen) then /b", got)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(path)
		di, _ := os.Stat(filepath.Dir(path))
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Errorf("modes: file %v dir %v; want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
		}
	}
	if err := Remember(path, "rel/.faber", day); err == nil {
		t.Error("Remember took a relative path")
	}
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestReadSkipsJunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state-dirs")
	body := "/plain/dir\n" +
		`{"dir":"/j/.faber","seen":"2026-01-02T03:04:05Z"}` + "\n" +
		`{"dir":"/j/.faber/","seen":"2026-02-02T03:04:05Z"}` + "\n" +
		"{torn\n" + "relative/dir\n" + `{"dir":"","seen":"2026-01-02T03:04:05Z"}` + "\n\n" +
		`{"dir":"/j/.faber","seen":"2025-01-02T03:04:05Z"}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Dir != "/plain/dir" || got[1].Dir != "/j/.faber" || got[1].Seen.Month() != 2 {
		t.Fatalf("Read = %+v", got)
	}
	if got, err := Read(filepath.Join(t.TempDir(), "none")); err != nil || got != nil {
		t.Fatalf("Read of a missing file = %v, %v; want nothing, no error", got, err)
	}
}

// TestConcurrentRemember: writers in parallel each append whole lines;
// every dir is read back.
func TestConcurrentRemember(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faber", "state-dirs")
	now := time.Now()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Remember(path, fmt.Sprintf("/dir/%d/.faber", i), now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("read %d dirs after 40 concurrent registrations", len(got))
	}
}

func TestRewrite(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "faber", "state-dirs")
	live := filepath.Join(root, "live")
	if err := os.MkdirAll(filepath.Join(live, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty") // exists, no runs/
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(root, "gone")
	now := time.Now()
	for _, d := range []string{live, empty, gone} {
		if err := Remember(path, d, now); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.Stat(path)
	dropped, err := Rewrite(path, func(e Entry) bool { return true })
	if err != nil || dropped != nil {
		t.Fatalf("Rewrite keeping all = %v, %v", dropped, err)
	}
	if after, _ := os.Stat(path); !os.SameFile(before, after) {
		t.Error("Rewrite that drops nothing replaced the file")
	}
	dropped, err = Rewrite(path, func(e Entry) bool { return Usable(e.Dir) })
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || dropped[0] != empty || dropped[1] != gone {
		t.Fatalf("dropped %v; want %s and %s", dropped, empty, gone)
	}
	got, _ := Read(path)
	if len(got) != 1 || got[0].Dir != live {
		t.Fatalf("after Rewrite: %+v", got)
	}
	if runtime.GOOS != "windows" {
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("rewritten file mode %v", fi.Mode().Perm())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Remember finds a dir's line among many others (it decodes only the lines
// that mention the dir), however the dir is spelt in JSON, and as a bare
// path; a dir that only contains it as a prefix is not it.
func TestRememberAmongMany(t *testing.T) {
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.Local)
	for _, dir := range []string{"/a/.faber", `/we "quote" & <esc>/.faber`, "/ünï/.faber"} {
		path := filepath.Join(t.TempDir(), "state-dirs")
		var b strings.Builder
		for i := range 2000 {
			fmt.Fprintf(&b, "{\"dir\":\"/tmp/run%d/.faber\",\"seen\":\"2026-03-01T08:00:00Z\"}\n", i)
		}
		fmt.Fprintf(&b, "{\"dir\":%q,\"seen\":\"2026-03-01T08:00:00Z\"}\n", dir+"2") // not dir
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Remember(path, dir, day); err != nil {
			t.Fatal(err)
		}
		if n := lines(t, path); n != 2002 {
			t.Fatalf("%s: %d lines, want one appended to 2001", dir, n)
		}
		if err := Remember(path, dir, day.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if n := lines(t, path); n != 2002 {
			t.Fatalf("%s: %d lines: the line Remember wrote was not found among the others", dir, n)
		}
	}
	// A bare path, the plain form of a line, counts without a day: it
	// is seen at the zero time, so a new line is written for today.
	path := filepath.Join(t.TempDir(), "state-dirs")
	if err := os.WriteFile(path, []byte("/c/.faber\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Remember(path, "/c/.faber", day); err != nil {
		t.Fatal(err)
	}
	if n := lines(t, path); n != 2 {
		t.Fatalf("%d lines after a bare path and a registration; want 2", n)
	}
}

// BenchmarkRememberSeen is the common case of every run: the dir is
// registered already today, in a registry of 5,000 lines.
func BenchmarkRememberSeen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state-dirs")
	now := time.Now()
	var s strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&s, "{\"dir\":\"/tmp/run%d/.faber\",\"seen\":%q}\n", i, now.UTC().Format(time.RFC3339))
	}
	if err := os.WriteFile(path, []byte(s.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := Remember(path, "/tmp/run2500/.faber", now); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Remember(path, "/tmp/run2500/.faber", now); err != nil {
			b.Fatal(err)
		}
	}
}
