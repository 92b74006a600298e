package spec

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	goparser "go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// bodyWriters are the functions that may write a field of a StepBody: the
// builder's, all before expandFanOuts makes the items that share a body,
// and build's and checked's dropping of src (the same nil for every
// sharer). A write anywhere else would reach every item of a fan-out and
// its join at once.
var bodyWriters = []string{
	"build", "cache", "checkRun", "checkSubPlan", "checkWhen", "checked",
	"end", "invalidOnFailure", "limits", "onFailure", "outputRef", "phase",
	"requests", "resolveDeps", "step", "writtenNeeds",
}

// TestStepBodyWrites holds every write of a StepBody field in the module
// (an assignment, ++/--, or its address taken) to the builder's functions
// in this package (bodyWriters): the items of a fan-out share their fan-out
// step's body (itemStep), so a body written after they are made is
// written for all of them. It type-checks the module's packages, their
// imports read from the export data `go list -export` gives.
func TestStepBodyWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Module", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Module                  *struct{ Path string }
	}
	exports := map[string]string{}
	var own []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/faber-run/faber" {
			own = append(own, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f := exports[path]; f != "" {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %q", path)
	})
	writes := 0
	for _, p := range own {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := goparser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		for _, f := range files {
			for _, fn := range f.Decls {
				fd, ok := fn.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				allowed := p.ImportPath == "github.com/faber-run/faber/spec" && slices.Contains(bodyWriters, fd.Name.Name)
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					var targets []ast.Expr
					switch x := n.(type) {
					case *ast.AssignStmt:
						if x.Tok != token.DEFINE {
							targets = x.Lhs
						}
					case *ast.IncDecStmt:
						targets = []ast.Expr{x.X}
					case *ast.UnaryExpr:
						if x.Op == token.AND {
							targets = []ast.Expr{x.X}
						}
					}
					for _, e := range targets {
						// s.F = , s.F.G = , s.F[k] = : each selector on the way
						// to the written value.
						for e != nil {
							switch y := ast.Unparen(e).(type) {
							case *ast.SelectorExpr:
								if bodyField(info.Selections[y]) {
									writes++
									if !allowed {
										t.Errorf("%s: %s writes StepBody.%s, which a fan-out's items share (TestStepBodyWrites)", fset.Position(y.Pos()), fd.Name.Name, y.Sel.Name)
									}
								}
								e = y.X
							case *ast.IndexExpr:
								e = y.X
							case *ast.StarExpr:
								e = y.X
							default:
								e = nil
							}
						}
					}
					return true
				})
			}
		}
	}
	if writes == 0 {
		t.Fatal("found no write of a StepBody field: the check finds nothing")
	}
}

// bodyField reports whether sel selects a field declared in StepBody.
func bodyField(sel *types.Selection) bool {
	if sel == nil || sel.Kind() != types.FieldVal {
		return false
	}
	v, ok := sel.Obj().(*types.Var)
	if !ok || v.Pkg() == nil || v.Pkg().Path() != "github.com/faber-run/faber/spec" {
		return false
	}
	// The field's own struct: the receiver's type, followed down the
	// selection's path of embedded fields.
	typ := sel.Recv()
	idx := sel.Index()
	for i, k := range idx {
		if p, ok := typ.(*types.Pointer); ok {
			typ = p.Elem()
		}
		named, ok := typ.(*types.Named)
		if !ok {
			return false
		}
		st, ok := named.Underlying().(*types.Struct)
		if !ok {
			return false
		}
		if i == len(idx)-1 {
			return named.Obj().Name() == "StepBody"
		}
		typ = st.Field(k).Type()
	}
	return false
}

// TestStepSizes holds the two halves of a step to the sizes the README
// states: an item step is its Step alone (one per item, up to 100,000 in
// a fan-out), and a body with Go's 8-byte header fits the 576-byte size
// class. A field added to either must find room (or the README's figure
// and this test change with it).
func TestStepSizes(t *testing.T) {
	if n := unsafe.Sizeof(Step{}); n > 112 {
		t.Errorf("a Step takes %d bytes, more than 112: it is what every fan-out item costs", n)
	}
	if n := unsafe.Sizeof(StepBody{}); n > 568 {
		t.Errorf("a StepBody takes %d bytes, more than 568: with its header it leaves Go's 576-byte class for 640", n)
	}
}
