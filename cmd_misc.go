package main

import (
	"fmt"
	"runtime"

	"github.com/faber-run/faber/spec"
)

// VersionCmd prints the version.
type VersionCmd struct{}

// Run prints version, commit and build date.
func (c *VersionCmd) Run(g *Globals) error {
	fmt.Fprintf(g.stdout, "faber %s (commit %s, built %s, %s %s/%s)\n", version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// SchemaCmd prints the plan JSON Schema.
type SchemaCmd struct{}

// Run prints the schema.
func (c *SchemaCmd) Run(g *Globals) error {
	b, err := spec.Schema()
	if err != nil {
		return withCode(exitState, err)
	}
	g.stdout.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		fmt.Fprintln(g.stdout)
	}
	return nil
}
