package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/importer"
	"github.com/faber-run/faber/spec/subst"
)

// ImportCmd converts a Torc workflow, a FABER plan.json or a NoETL playbook
// into a faber plan.
type ImportCmd struct {
	Format string `arg:"" name:"format" enum:"torc,faber,noetl" help:"What FILE is: torc (a Torc workflow specification), faber (a FABER plan.json) or noetl (a NoETL playbook)."`
	File   string `arg:"" name:"file" help:"The file to convert (YAML or JSON)."`
	Out    string `short:"o" name:"output" placeholder:"FILE" help:"Write the plan to FILE instead of stdout."`
	Agent  string `name:"agent" placeholder:"CMD" help:"FABER: the agent command line that prompts and skills run through (default: the plan's agent, else 'claude -p')."`
	JSON   bool   `name:"json" help:"Print {plan, written_to, warnings} as JSON: the plan's YAML text, the file written (-o) or null, the warnings (also on stderr)."`
}

// Help explains import.
func (c *ImportCmd) Help() string {
	return `Prints the faber plan (YAML) equivalent to a Torc workflow specification, a
FABER plan.json or a NoETL playbook, or writes it to -o FILE. Fields that faber cannot honour are
errors naming the field and its line; fields that are safe to drop give a
warning on stderr. The converted plan is validated as 'faber validate' would
validate it where it is written (beside FILE when printed); a plan that does
not validate is neither printed nor written. Exits 2 if the file cannot be
converted, or its plan does not validate.

'faber run' and 'faber validate' also take these files directly when their
format is unambiguous; import shows (and lets you keep) what they run.

Examples:
  faber import torc workflow.yaml
  faber import torc workflow.json -o plan.yaml && faber validate plan.yaml
  faber import faber plan.json --agent "claude -p" -o plan.yaml
  faber import noetl playbook.yaml -o plan.yaml
  faber run playbook.yaml --set environment=staging`
}

// Run converts the file.
func (c *ImportCmd) Run(g *Globals) error {
	if strings.EqualFold(filepath.Ext(c.Out), ".json") {
		return withCode(exitUsage, fmt.Errorf("-o %s: faber import writes a YAML plan: name the file .yaml or .yml", c.Out))
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("cannot read %s: %w", c.File, unwrapPath(err)))
	}
	tuneGCReader(int64(len(data)))
	format := importer.FormatTorc
	switch c.Format {
	case "faber":
		format = importer.FormatFaber
	case "noetl":
		format = importer.FormatNoetl
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
	if err := c.check(format, data, opts, out); err != nil {
		return err
	}
	if c.Out == "" && !c.JSON {
		_, err := g.stdout.Write(out)
		return err
	}
	if c.Out != "" {
		if err := os.WriteFile(c.Out, out, 0o644); err != nil {
			return withCode(exitFailed, fmt.Errorf("cannot write %s: %w", c.Out, unwrapPath(err)))
		}
	}
	if c.JSON {
		res := struct {
			Plan      string   `json:"plan"`
			WrittenTo *string  `json:"written_to"`
			Warnings  []string `json:"warnings"`
		}{Plan: string(out), Warnings: []string{}}
		if c.Out != "" {
			res.WrittenTo = &c.Out
		}
		for _, w := range warns {
			res.Warnings = append(res.Warnings, fmt.Sprint(w))
		}
		return printJSON(g.stdout, res)
	}
	return nil
}

// check validates the converted plan out as faber validate reads it where
// it is written (-o FILE; when printed, beside the source file), so that
// import never hands over a plan that does not validate. The error is one
// line: the first problem, at its place in the source file when the source
// converted in place shows it too (as faber validate FILE would say), else
// at its line of the converted plan.
func (c *ImportCmd) check(format importer.Format, data []byte, opts importer.Options, out []byte) error {
	dest := c.Out
	if dest == "" {
		dest = strings.TrimSuffix(c.File, filepath.Ext(c.File)) + ".yaml"
	}
	_, err := spec.Parse(dest, out, spec.Options{})
	if err == nil {
		return nil
	}
	var inv *spec.Invalid
	if !errors.As(err, &inv) || len(inv.Errors) == 0 {
		return withCode(exitUsage, fmt.Errorf("the converted plan does not validate: %v; nothing written", err))
	}
	first := inv.Errors[0]
	more := len(inv.Errors) - 1
	where := "the converted plan"
	if c.Out != "" {
		where = c.Out
	}
	first.File = where
	if first.Line > 0 {
		first.File += fmt.Sprintf(" (line %d)", first.Line)
		first.Line, first.Col = 0, 0
	}
	// The source, converted in place, usually shows the same problem at
	// its own line: point there, as faber validate FILE does.
	var src *spec.Invalid
	if _, err := spec.Parse(c.File, data, spec.Options{ImportFormat: format, Import: opts}); errors.As(err, &src) && len(src.Errors) > 0 {
		first, more = src.Errors[0], len(src.Errors)-1
	}
	msg := first.Error()
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more %s)", more, plural(more, "error", "errors"))
	}
	if c.Out != "" {
		return withCode(exitUsage, fmt.Errorf("%s (the converted plan does not validate; %s not written)", msg, c.Out))
	}
	return withCode(exitUsage, fmt.Errorf("%s (the converted plan does not validate; nothing printed)", msg))
}
