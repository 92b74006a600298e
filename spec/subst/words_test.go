package subst

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		tmpl string
		want []string
	}{
		{"a", []string{"a"}},
		{"  a   b\tc  ", []string{"a", "b", "c"}},
		{`/debug --work-id {work_id} --step {step_id} --error "{error}"`,
			[]string{"/debug", "--work-id", "{work_id}", "--step", "{step_id}", "--error", "{error}"}},
		{`a "b c" 'd e' f\ g`, []string{"a", "b c", "d e", "f g"}},
		{`a "" ''`, []string{"a", "", ""}},
		{`a "x\"y\\z\$w\q" 'p\q'`, []string{"a", `x"y\z$w\q`, `p\q`}},
		{`a 'it'\''s'`, []string{"a", "it's"}},
		{"a b\\\nc", []string{"a", "bc"}}, // line continuation
		{`a {{ }} {{x}} {x}}`, []string{"a", "{{", "}}", "{{x}}", "{x}}"}},
		{`a { } {a,b} x{ }y`, []string{"a", "{", "}", "{a,b}", "x{", "}y"}},
		{`a '{x}' "{x}" \{x} pre{x}post`, []string{"a", "{x}", "{x}", "{x}", "pre{x}post"}},
		{`a * ~ ?x [ab] !x a=b %x`, []string{"a", "*", "~", "?x", "[ab]", "!x", "a=b", "%x"}},
		{"a é 日本", []string{"a", "é", "日本"}},
		// A carriage return is an ordinary character to sh and bash, quoted or not.
		{"a 'x\r\ny' \"\r\n\" b\rc\r", []string{"a", "x\r\ny", "\r\n", "b\rc\r"}},
	}
	for _, tt := range tests {
		got, err := Words(tt.tmpl)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Words(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
}

func TestWordsErrors(t *testing.T) {
	tests := []struct{ tmpl, err string }{
		{"", "empty command"},
		{"   \n ", "empty command"},
		{"a $x", `parameter expansion "$x" is not allowed`},
		{"a ${x}", `parameter expansion "${x}" is not allowed`},
		{`a "pre$x"`, `parameter expansion "$x" is not allowed`},
		{"a $(id)", `command substitution "$(id)" is not allowed`},
		{"a `id`", "command substitution \"`id`\" is not allowed"},
		{`a "$(id)"`, `command substitution "$(id)" is not allowed`},
		{"a $((1+2))", `arithmetic expansion "$((1+2))" is not allowed`},
		{"a <(x)", `process substitution "<(x)" is not allowed`},
		{"a; b", "only one command is allowed"},
		{"a;", `";" is not allowed`},
		{"a\nb", "only one command is allowed"},
		{"a | b", `"|" is not allowed`},
		{"a && b", `"&&" is not allowed`},
		{"a || b", `"||" is not allowed`},
		{"a &", `"&" is not allowed`},
		{"a > f", `redirection ">" is not allowed`},
		{"a < f", `redirection "<" is not allowed`},
		{"a 2>&1", `redirection ">&" is not allowed`},
		{"! a", `"!" is not allowed`},
		{"X=1 a", `variable assignment "X=1" is not allowed`},
		{"a # note", `"#" starts a comment`},
		{"# note", `"#" starts a comment`},
		{"{ a; }", `shell syntax "{ a; }" is not allowed`},
		{"(a)", `shell syntax "(a)" is not allowed`},
		{"if a; then b; fi", "shell syntax"},
		{"a $'x'", "$'...' quoting is not supported"},
		{`a $"x"`, `$"..." quoting is not supported`},
		{`a "unterminated`, "1:3: reached EOF without closing quote"},
		{`a 'unterminated {v}`, "1:3: reached EOF without closing quote"},
		{"a\n'b", "2:1: reached EOF without closing quote"},
		{`{x} "{y`, "1:5: reached EOF without closing quote"}, // positions are the template's
		{"a\x00b", "the command contains a NUL byte"},
	}
	for _, tt := range tests {
		got, err := Words(tt.tmpl)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Words(%q) = %q, %v; want error containing %q", tt.tmpl, got, err, tt.err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n") || err.Error() != strings.TrimSpace(err.Error()) {
			t.Errorf("Words(%q) error is not one line: %q", tt.tmpl, err)
		}
		if _, aerr := Argv(tt.tmpl, nil); aerr == nil || aerr.Error() != err.Error() {
			t.Errorf("Argv(%q) error = %v, want %v", tt.tmpl, aerr, err)
		}
	}
}

func TestArgv(t *testing.T) {
	vars := map[string]string{
		"work_id": "137",
		"step_id": "build-validate",
		"error":   "Field 'name' is required",
		"empty":   "",
		"evil":    `'; touch X; echo '"$(id)` + "`id`\n*",
		"ref":     "{work_id} {{",
		"dash":    "-n",
		"nul":     "a\x00b",
		"bad":     "\xff\xfe",
	}
	tests := []struct {
		tmpl string
		want []string
	}{
		{`/debug --work-id {work_id} --step {step_id} --error "{error}"`,
			[]string{"/debug", "--work-id", "137", "--step", "build-validate", "--error", "Field 'name' is required"}},
		// The three ways to write a reference give the same single argument.
		{`/x --problem "{error}"`, []string{"/x", "--problem", "Field 'name' is required"}},
		{`/x --problem {error}`, []string{"/x", "--problem", "Field 'name' is required"}},
		{`/x --problem '{error}'`, []string{"/x", "--problem", "Field 'name' is required"}},
		{`/x {empty} "{empty}" '{empty}'`, []string{"/x", "", "", ""}},
		{`/x {evil}`, []string{"/x", vars["evil"]}},
		{`/x pre-{evil}-post`, []string{"/x", "pre-" + vars["evil"] + "-post"}},
		{`/x {ref}`, []string{"/x", "{work_id} {{"}}, // values are not re-scanned
		{`/x {dash} {nul} {bad}`, []string{"/x", "-n", "a\uFFFDb", "\xff\xfe"}},
		{`/x {{work_id}} '{{'`, []string{"/x", "{work_id}", "{"}},
		{`/x '{'work_id} \{work_id}`, []string{"/x", "{work_id}", "137"}}, // quote removal never makes a reference
		{`/x {work_id}{step_id} a{empty}b`, []string{"/x", "137build-validate", "ab"}},
	}
	for _, tt := range tests {
		got, err := Argv(tt.tmpl, vars)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Argv(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	if _, err := Argv("/x {nope}", vars); err == nil || err.Error() != "unknown variable {nope}" {
		t.Errorf("Argv with unknown variable: err = %v", err)
	}
}

// TestArgvExec hands Argv's result to a real program: what it receives is exactly
// the value, one argument, with no shell involved.
func TestArgvExec(t *testing.T) {
	rec := recorder(t)
	for _, v := range hostileValues {
		argv, err := Argv(`/rec --problem "{v}" {v} '{v}' x{v}y`, map[string]string{"v": v})
		if err != nil {
			t.Fatalf("Argv: %v", err)
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "rec")
		cmd := exec.Command(rec, argv[1:]...)
		cmd.Dir = dir
		cmd.Env = recorderEnv(out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("recorder: %v: %s", err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		c := CleanValue(v)
		want := [][]string{{"--problem", c, c, c, "x" + c + "y"}}
		if got := parseRecords(t, data); !reflect.DeepEqual(got, want) {
			t.Errorf("value %q: program got %q, want %q", v, got, want)
		}
		onlyFiles(t, dir, "rec")
	}
}
