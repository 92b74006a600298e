package main

import (
	"fmt"

	"github.com/faber-run/faber/spec"
)

// SchemaCmd prints the plan JSON Schema.
type SchemaCmd struct{}

// Help explains schema.
func (c *SchemaCmd) Help() string {
	return `Prints the JSON Schema (draft 2020-12) of the plan format, for editors that
complete and check YAML and JSON against a schema.

Examples:
  faber schema > faber.schema.json
  # VS Code (YAML extension): first line of a plan
  # yaml-language-server: $schema=./faber.schema.json`
}

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
