package subst

import (
	"reflect"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	tests := []struct {
		tmpl string
		want []NameRef
	}{
		{"", nil},
		{"plain text", nil},
		{"{a}", []NameRef{{"a", 0}}},
		{"x {work_id} y {_x1}", []NameRef{{"work_id", 2}, {"_x1", 14}}},
		{"{a}{b}", []NameRef{{"a", 0}, {"b", 3}}},
		{"{{a}}", nil},                             // escaped braces
		{"{{{a}}}", []NameRef{{"a", 2}}},           // {{ then {a} then }}
		{"{{a}", nil},                              // {{ wins: literal "{a}"
		{"{a}}", []NameRef{{"a", 0}}},              // {a} then a lone }
		{"${a} $${b} ${{c}}", nil},                 // shell parameter syntax
		{"{A} {1a} {a-b} {a.b} { a} {a } {}", nil}, // not names
		{"'{a}' \"{b}\"", []NameRef{{"a", 1}, {"b", 7}}},
		{"{a", nil},
		{"a}", nil},
		{"\\{a}", []NameRef{{"a", 1}}}, // a backslash does not escape faber's braces
	}
	for _, tt := range tests {
		if got := Names(tt.tmpl); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Names(%q) = %v, want %v", tt.tmpl, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{
		"v":     "val",
		"empty": "",
		"evil":  "$(touch X) `id` {v} {{",
		"nul":   "a\x00b",
		"bad":   "\xff\xfe",
	}
	tests := []struct {
		tmpl, want, err string
	}{
		{tmpl: "", want: ""},
		{tmpl: "no refs", want: "no refs"},
		{tmpl: "{v}", want: "val"},
		{tmpl: "a{v}b{v}", want: "avalbval"},
		{tmpl: "[{empty}]", want: "[]"},
		{tmpl: "{{v}} {{{v}}}", want: "{v} {val}"},
		{tmpl: "${v} {x-y} {", want: "${v} {x-y} {"},
		{tmpl: "{evil}", want: "$(touch X) `id` {v} {{"}, // values are never re-scanned
		{tmpl: "{nul}", want: "a\uFFFDb"},
		{tmpl: "{bad}", want: "\xff\xfe"},
		{tmpl: "a {nope} b", err: "unknown variable {nope}"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.tmpl, vars)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Expand(%q) error = %v, want %q", tt.tmpl, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"abc", "abc"},
		{"A-Za_z0.9/x:y,z@w%q+r=s", "A-Za_z0.9/x:y,z@w%q+r=s"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$(x)", "'$(x)'"},
		{"a\nb", "'a\nb'"},
		{"~", "'~'"},
		{"*", "'*'"},
		{"\xff", "'\xff'"},
		{"é", "'é'"},
		{"{v}", "'{v}'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoin(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{""}, "''"},
		{[]string{"/x", "--problem", "bad thing"}, "/x --problem 'bad thing'"},
		{[]string{"/debug", "--error", "Field 'name' is required"}, `/debug --error 'Field '\''name'\'' is required'`},
	}
	for _, tt := range tests {
		got := Join(tt.in)
		if got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// Join's output splits back into the same words.
		if len(tt.in) > 0 {
			back, err := Words(got)
			if err != nil || !reflect.DeepEqual(back, tt.in) {
				t.Errorf("Words(Join(%q)) = %q, %v", tt.in, back, err)
			}
		}
	}
}

func TestIsPOSIXShell(t *testing.T) {
	for _, s := range []string{"sh", "bash", "/bin/sh", "/usr/bin/zsh", "dash", "ksh", "mksh", "ash", "bash5", "bash-5.2", `C:\msys64\usr\bin\bash.exe`, "BASH"} {
		if !IsPOSIXShell(s) {
			t.Errorf("IsPOSIXShell(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "fish", "csh", "tcsh", "cmd", "cmd.exe", "powershell", "pwsh", "nu", "/usr/bin/fish", "shx", "python3", "5"} {
		if IsPOSIXShell(s) {
			t.Errorf("IsPOSIXShell(%q) = true, want false", s)
		}
	}
}

func TestCleanValue(t *testing.T) {
	if got := CleanValue("a\x00\x00b\xff"); got != "a\uFFFD\uFFFDb\xff" {
		t.Errorf("CleanValue = %q", got)
	}
	if got := CleanValue(strings.Repeat("x", 3)); got != "xxx" {
		t.Errorf("CleanValue = %q", got)
	}
}
