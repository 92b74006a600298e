package main

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestExamplesValidate keeps the README's example plans valid.
func TestExamplesValidate(t *testing.T) {
	plans, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(plans) < 2 {
		t.Fatalf("examples: %v %v", plans, err)
	}
	for _, p := range plans {
		var out, errb bytes.Buffer
		if code := Main([]string{"validate", p}, nil, &out, &errb); code != 0 {
			t.Errorf("faber validate %s: exit %d: %s", p, code, errb.String())
		}
	}
}

// TestHelp checks that help for every command renders and exits 0.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"resume", "--help"}, {"validate", "--help"}, {"classify", "--help"}} {
		var out, errb bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != 0 || !bytes.Contains(out.Bytes(), []byte("Usage: faber")) {
			t.Errorf("faber %v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"run"}, nil, &out, &errb); code != 2 {
		t.Errorf("faber run without a plan: exit %d, want 2", code)
	}
}
