package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/faber-run/faber/spec/importer"
	"github.com/faber-run/faber/spec/subst"
)

// ImportCmd converts a Torc workflow or a FABER plan.json into a faber plan.
type ImportCmd struct {
	Format string `arg:"" name:"format" enum:"torc,faber" help:"What FILE is: torc (a Torc workflow specification) or faber (a FABER plan.json)."`
	File   string `arg:"" name:"file" help:"The file to convert (YAML or JSON)."`
	Out    string `short:"o" name:"output" placeholder:"FILE" help:"Write the plan to FILE instead of stdout."`
	Agent  string `name:"agent" placeholder:"CMD" help:"FABER: the agent command line that prompts and skills run through (default: the plan's agent, else 'claude -p')."`
}

// Help explains import.
func (c *ImportCmd) Help() string {
	return `Prints the faber plan (YAML) equivalent to a Torc workflow specification or a
FABER plan.json, or writes it to -o FILE. Fields that faber cannot honour are
errors naming the field and its line; fields that are safe to drop give a
warning on stderr. Exits 2 if the file cannot be converted.

'faber run' and 'faber validate' also take these files directly when their
format is unambiguous; import shows (and lets you keep) what they run.

Examples:
  faber import torc workflow.yaml
  faber import torc workflow.json -o plan.yaml && faber validate plan.yaml
  faber import faber plan.json --agent "claude -p" -o plan.yaml`
}

// Run converts the file.
func (c *ImportCmd) Run(g *Globals) error {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("cannot read %s: %w", c.File, unwrapPath(err)))
	}
	format := importer.FormatTorc
	if c.Format == "faber" {
		format = importer.FormatFaber
	}
	var opts importer.Options
	if strings.TrimSpace(c.Agent) != "" {
		words, err := subst.Words(c.Agent)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--agent: %v", err))
		}
		opts.Agent = words
	}
	out, warns, err := importer.Convert(format, c.File, data, opts)
	for _, w := range warns {
		fmt.Fprintf(g.stderr, "faber: warning: %s\n", w)
	}
	if err != nil {
		var ie *importer.Errors
		if !errors.As(err, &ie) {
			return withCode(exitUsage, err)
		}
		for _, d := range ie.Diags {
			one := &importer.Errors{File: ie.File, Diags: []importer.Diagnostic{d}}
			fmt.Fprintf(g.stderr, "faber: %s\n", one.Error())
		}
		return codeOnly(exitUsage)
	}
	if c.Out == "" {
		_, err := g.stdout.Write(out)
		return err
	}
	if err := os.WriteFile(c.Out, out, 0o644); err != nil {
		return withCode(exitFailed, fmt.Errorf("cannot write %s: %w", c.Out, unwrapPath(err)))
	}
	return nil
}
