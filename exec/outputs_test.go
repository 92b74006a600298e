package exec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOutputs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Output
	}{
		{"", nil},
		{"\n\n", nil},
		{"a=1\nB_2=x=y\n", []Output{{"a", "1"}, {"B_2", "x=y"}}},
		{"a=\n", []Output{{"a", ""}}},
		{"a= spaced \r\nb=2", []Output{{"a", " spaced "}, {"b", "2"}}},
		{"a=1\nb=2\na=3\n", []Output{{"a", "3"}, {"b", "2"}}},
		{"m<<EOF\nline 1\n\nline 3\nEOF\nn=1\n", []Output{{"m", "line 1\n\nline 3"}, {"n", "1"}}},
		{"m<<EOF\nEOF\n", []Output{{"m", ""}}},
		{"m<<END\r\nx\r\nEND\r\n", []Output{{"m", "x\r"}}},
		{"m<<END\na\r\n\rb\r\nEND\n", []Output{{"m", "a\r\n\rb\r"}}},
		{"v=\xff\xfe bytes $(x) 'q'\n", []Output{{"v", "\xff\xfe bytes $(x) 'q'"}}},
	} {
		got, err := ParseOutputs([]byte(tc.in))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseOutputs(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseOutputsErrors(t *testing.T) {
	big := strings.Repeat("x", MaxOutputValue+1)
	for _, tc := range []struct{ in, want string }{
		{"a=1\njust text\n", `$FABER_OUTPUTS line 2: "just text" has no = after the key just`},
		{"=1\n", `$FABER_OUTPUTS line 1: "=1" is not KEY=VALUE`},
		{"1a=1\n", `line 1: "1a=1" is not KEY=VALUE`},
		{"a-b=1\n", `line 1: "a-b=1" has no = after the key a`},
		{"m<<\nx\n", "line 1: m<< names no delimiter"},
		{"x=1\nm<<EOF\nx\n", `line 2: m<<EOF: no line "EOF" ends the value`},
		{"v=" + big + "\n", "line 1: the value of v is 1048577 bytes; a value may have at most 1048576 (1 MiB)"},
		{"v<<E\n" + big + "\nE\n", "line 1: the value of v is more than 1048576 bytes"},
		{strings.Repeat("a="+strings.Repeat("y", MaxOutputValue)+"\n", 1) + "b=" + strings.Repeat("y", MaxOutputValue) + "\nc=" + strings.Repeat("y", MaxOutputValue) + "\nd=" + strings.Repeat("y", MaxOutputValue) + "\n", "line 4: the step's outputs come to more than 4194304 bytes"},
	} {
		_, err := ParseOutputs([]byte(tc.in))
		var oe *OutputsError
		if err == nil || !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseOutputs(%.40q): %v; want an OutputsError with %q", tc.in, err, tc.want)
		}
	}
	// A value given again replaces the first in the total.
	again := strings.Repeat("a="+strings.Repeat("y", MaxOutputValue)+"\n", 8)
	if _, err := ParseOutputs([]byte(again)); err != nil {
		t.Errorf("one key written 8 times at the value limit: %v", err)
	}
}

func TestReadOutputs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "attempt-1.outputs")
	if outs, err := readOutputs(p); outs != nil || err != nil {
		t.Fatalf("no file: %v, %v; want nothing", outs, err)
	}
	if err := os.WriteFile(p, []byte("k=v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outs, err := readOutputs(p)
	if err != nil || len(outs) != 1 || outs[0] != (Output{"k", "v"}) {
		t.Fatalf("readOutputs = %v, %v", outs, err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := readOutputs(p); err == nil || !strings.Contains(err.Error(), "the file is 10485760 bytes") {
		t.Fatalf("a 10 MiB file: %v", err)
	}
}

func TestOutputJSONByteExact(t *testing.T) {
	for _, o := range []Output{{"a", "text ✓"}, {"b", ""}, {"c", "\xff\x00\xfe"}} {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back Output
		if err := json.Unmarshal(b, &back); err != nil || back != o {
			t.Errorf("%q -> %s -> %q, %v", o, b, back, err)
		}
	}
	b, _ := json.Marshal(Output{"c", "\xff"})
	if string(b) != `{"key":"c","value_base64":"/w=="}` {
		t.Errorf("bytes that are not UTF-8: %s", b)
	}
}

func FuzzParseOutputs(f *testing.F) {
	f.Add([]byte("a=1\nm<<E\nx\nE\n"))
	f.Add([]byte("k<<\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		outs, err := ParseOutputs(b)
		if err != nil {
			return
		}
		// What parses can be written back in the heredoc form and parses
		// to the same values.
		var w strings.Builder
		seen := map[string]bool{}
		for _, o := range outs {
			if seen[o.Key] {
				t.Fatalf("key %q twice", o.Key)
			}
			seen[o.Key] = true
			for _, l := range strings.Split(o.Value, "\n") {
				if l == "__D__" || l == "__D__\r" {
					return
				}
			}
			w.WriteString(o.Key + "<<__D__\n" + o.Value + "\n__D__\n")
		}
		again, err := ParseOutputs([]byte(w.String()))
		if err != nil || !reflect.DeepEqual(again, outs) && len(outs) > 0 {
			t.Fatalf("%q parsed to %q; written back as %q it parsed to %q, %v", b, outs, w.String(), again, err)
		}
	})
}
