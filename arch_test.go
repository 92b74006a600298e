package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// allowedImports is the layering (README, "Architecture"): which of faber's
// own packages each package may import. Tests may import more.
var allowedImports = map[string][]string{
	"spec/subst":         {},
	"spec/importer":      {"internal/lazyre"},
	"spec":               {"spec/subst", "spec/importer", "internal/regfile"},
	"state":              {"internal/regfile"},
	"exec":               {"spec", "spec/subst", "internal/lazyre", "internal/regfile"},
	"tui":                {"exec"},
	"internal/control":   {"exec"},
	"internal/run":       {"exec", "spec", "spec/subst", "state", "internal/control"},
	"internal/termquiet": {},
	"internal/lazyre":    {},
	"internal/regfile":   {},
	"internal/registry":  {},
	"internal/tmuxtest":  {},
	"internal/evtest":    {"exec"},
	"internal/runtest":   {"exec", "state", "internal/run"},
	"mcp":                {"exec", "spec", "state", "internal/run", "internal/control"},
	"internal/report":    {"exec", "spec", "state", "internal/run"},
}

// TestLayering keeps the package boundaries: spec knows no processes or
// store; exec knows spec, not state or tui; state knows none of them; tui
// only exec's event types; the application layer (internal/run) is what the
// command line, the live view and the MCP server share.
func TestLayering(t *testing.T) {
	const module = "github.com/faber-run/faber/"
	for pkg, allowed := range allowedImports {
		files, _ := filepath.Glob(filepath.Join(filepath.FromSlash(pkg), "*.go"))
		if len(files) == 0 {
			if _, err := os.Stat(pkg); err == nil {
				t.Errorf("%s: no Go files", pkg)
			}
			continue
		}
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[a] = true
		}
		var bad []string
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if rest, ours := strings.CutPrefix(p, module); ours && !ok[rest] {
					bad = append(bad, filepath.Base(f)+" imports "+rest)
				}
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			t.Errorf("%s: %s (allowed: %v)", pkg, b, allowed)
		}
	}
}
