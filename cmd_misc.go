package main

import (
	"fmt"

	"github.com/faber-run/faber/spec"
)

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
