package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzResult feeds arbitrary bytes to the result file parser: it never
// panics, the status is "", success or failure, and the message is valid
// UTF-8 (it goes into events and {error}). Keys match in any case, as
// encoding/json matches them ({"messAge": ...} is the message).
func FuzzResult(f *testing.F) {
	for _, s := range []string{
		`{"status": "success"}`,
		`{"status": "failure", "message": "disk full"}`,
		`{"status": "failure", "message": "two\nlines \u00e9 \ud800"}`,
		`{"status": "maybe"}`,
		`{"status": 1, "message": ["x"]}`,
		`{"message": "no status"}`,
		`[]`, `null`, ``, "   \n", `{"status": "success"`,
		"{\"status\": \"failure\", \"message\": \"\xff\xfe\"}",
		`{"status": "success", "status": "failure"}`,
		`{"status":"failure","cost_usd":0.5,"turns":3,"tokens":"x"}`,
		`{"type":"result","total_cost_usd":0.1,"num_turns":2,"usage":{"input_tokens":5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		status, msg := parseResult(b)
		if status != "" && status != "success" && status != "failure" {
			t.Fatalf("status %q", status)
		}
		if !utf8.ValidString(msg) {
			t.Fatalf("message not UTF-8: %q", msg)
		}
		if len(msg) > len(b)*3 { // \uXXXX is 6 bytes, U+FFFD 3; one byte of the file 3 at most
			t.Fatalf("a message of %d bytes from %d", len(msg), len(b))
		}
		// What a process reports spending is never negative (README
		// "Budgets").
		for _, sp := range []Spent{must(parseSpent(b)), must(agentSpent(b))} {
			if sp.CostUSD < 0 || sp.CostUSD > 1e12 || sp.Turns < 0 || sp.Tokens < 0 || sp.Attempts != 0 {
				t.Fatalf("spent %+v from %q", sp, b)
			}
		}
	})
}

// TestReadResultBounded: a result file larger than maxResult, or that is
// not a regular file, counts as no result file, and reading it neither
// hangs (a FIFO without a writer) nor reads without end (/dev/zero).
func TestReadResultBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	body := `{"status": "failure", "message": "` + strings.Repeat("x", maxResult) + `"}`
	if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte(`{"status": "failure", "message": "m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"big": big, "ok": ok}
	for name, path := range specialFiles(t, dir) {
		cases[name] = path
	}
	for name, path := range cases {
		type res struct{ status, msg string }
		done := make(chan res, 1)
		go func() {
			s, m, _, _ := readResult(path)
			done <- res{s, m}
		}()
		select {
		case r := <-done:
			want := ""
			if name == "ok" {
				want = "failure"
			}
			if r.status != want || (want == "" && r.msg != "") {
				t.Errorf("%s: readResult = %q, %d bytes of message; want status %q", name, r.status, len(r.msg), want)
			}
		case <-time.After(10 * time.Second): // a bound, not a timing: it returns at once
			t.Fatalf("%s: readResult still reading after 10 s", name)
		}
	}
}

func must[T, U any](v T, _ U) T { return v }
