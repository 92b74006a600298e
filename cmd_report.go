package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/faber-run/faber/internal/report"
)

// ReportCmd writes a run's report.
type ReportCmd struct {
	RunRef `embed:""`
	Out    string `short:"o" name:"output" placeholder:"FILE" help:"Write the report to FILE (default: <run-id>.html in the current directory; with --json, stdout; - for stdout)."`
	JSON   bool   `name:"json" help:"Print the report's data as one JSON object instead of writing HTML (README \"Run reports\")."`
}

// Help explains report.
func (c *ReportCmd) Help() string {
	return `Writes one self-contained HTML file about a run, made from its event log and
records alone: a timeline of every attempt (retries, recovery scripts, backoff
waits, handlers, pending decisions, cached and skipped steps drawn apart; a
fan-out's items grouped; the critical path marked), per step its status,
attempts, exit codes, CPU and peak memory against its limits and requests and
the decision trail in words, the run's --set values (secrets masked), its plan
and the faber version. The file loads nothing from the network: open it in any
browser, mail it, print it; the path written is printed. --json prints the
same data as one JSON object (README "Run reports"), or writes it to -o FILE.

Examples:
  faber report --last                      writes <run-id>.html here
  faber report build-20260501T100000-1a2b -o build.html
  faber report --last --json | jq '.steps[] | select(.attempts | length > 1) | .id'`
}

// Run builds the report and writes it.
func (c *ReportCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	r, de, err := report.Load(g.StateDir, c.RunID, currentBuild().String())
	if err != nil {
		return err
	}
	warnDamaged(g, de)
	out := c.Out
	switch {
	case out == "" && c.JSON:
		out = "-" // as every --json of faber's: to stdout
	case out == "":
		out = c.RunID + ".html"
	}
	write := func(f io.Writer) error {
		if c.JSON {
			return printJSON(f, r)
		}
		return report.WriteHTML(f, r)
	}
	if out == "-" {
		return write(g.stdout)
	}
	// Written beside its place and renamed: a report cut short by an
	// error never replaces a good one.
	abs, err := filepath.Abs(out)
	if err != nil {
		return withCode(exitUsage, err)
	}
	f, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.tmp")
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("cannot write %s: %w", out, err))
	}
	tmp := f.Name()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, abs)
	}
	if err != nil {
		os.Remove(tmp)
		return withCode(exitState, fmt.Errorf("cannot write %s: %w", out, err))
	}
	fmt.Fprintln(g.stdout, out)
	return nil
}
