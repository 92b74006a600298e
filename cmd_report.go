package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/internal/report"
)

// ReportCmd writes a run's report.
type ReportCmd struct {
	RunRef `embed:""`
	Plan   string `name:"plan" placeholder:"NAME" help:"Report the history of the plan named NAME (its name:, as faber list --plan matches it) over its last finished runs instead of one run (README \"History\")."`
	Runs   int    `name:"runs" placeholder:"N" help:"How many finished runs the history covers (default 20): with --plan, or the History section of a run's report."`
	Out    string `short:"o" name:"output" placeholder:"FILE" help:"Write the report to FILE (default: <run-id>.html, with --plan <plan>-history.html, in the current directory; with --json, stdout; - for stdout)."`
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

With --plan NAME instead of a run, it reports the plan's history over its
last finished runs (--runs N, default 20; active runs left out): per step
the durations (min, median, max and one per run), failure and retry rates,
the flaky steps (succeeded only after a retry) first, and right-sizing of
every memory limit or request and timeout: the measured peak and 1.2× it
as a suggestion (README "History"). A run's report has the same as its
History section, over the runs up to and including it.

Examples:
  faber report --last                      writes <run-id>.html here
  faber report build-20260501T100000-1a2b -o build.html
  faber report --last --json | jq '.steps[] | select(.attempts | length > 1) | .id'
  faber report --plan build                writes build-history.html here
  faber report --plan build --runs 100 --json | jq '.steps[] | select(.flaky > 0) | .id'`
}

// Run builds the report and writes it.
func (c *ReportCmd) Run(g *Globals) error {
	if c.Runs < 0 {
		return withCode(exitUsage, fmt.Errorf("--runs %d: N must be 1 or more (default %d)", c.Runs, report.DefaultWindow))
	}
	if c.Plan != "" {
		if c.RunID != "" || c.Last {
			return withCode(exitUsage, fmt.Errorf("give a run (its id or --last) or --plan NAME, not both"))
		}
		return c.history(g)
	}
	if err := c.resolve(g); err != nil {
		return err
	}
	r, de, err := report.Load(g.StateDir, c.RunID, currentBuild().String())
	if err != nil {
		return err
	}
	warnDamaged(g, de)
	if r.History, err = report.LoadHistory(g.StateDir, r.Plan, c.Runs, r.RunID); err != nil {
		fmt.Fprintf(g.stderr, "faber: warning: no History section: %v\n", err)
	}
	return c.write(g, c.RunID+".html", func(f io.Writer) error {
		if c.JSON {
			return printJSON(f, r)
		}
		return report.WriteHTML(f, r)
	})
}

// history writes the history of the plan --plan names.
func (c *ReportCmd) history(g *Globals) error {
	h, err := report.LoadHistory(g.StateDir, c.Plan, c.Runs, "")
	if err != nil {
		return err
	}
	if len(h.Runs) == 0 {
		return report.NoRunsError(c.Plan, g.StateDir)
	}
	now := time.Now()
	return c.write(g, fileName(c.Plan)+"-history.html", func(f io.Writer) error {
		if c.JSON {
			return printJSON(f, h)
		}
		return report.WriteHistoryHTML(f, h, currentBuild().String(), now)
	})
}

// fileName is a plan name made a safe file name: every character but
// [A-Za-z0-9._-] becomes '-', and a leading '.' or '-' (a hidden file, an
// option) is dropped.
func fileName(plan string) string {
	b := []byte(plan)
	for i, ch := range b {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-'
		if !ok {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".-")
	if s == "" {
		s = "plan"
	}
	return s
}

// write writes what write writes to -o FILE (def when not given; stdout
// for --json), whole or not at all, and prints the path written.
func (c *ReportCmd) write(g *Globals, def string, write func(io.Writer) error) error {
	out := c.Out
	switch {
	case out == "" && c.JSON:
		out = "-" // as every --json of faber's: to stdout
	case out == "":
		out = def
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
	f, err := createBeside(abs)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("cannot write %s: %w", out, err))
	}
	tmp := f.Name()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if fi, serr := os.Stat(abs); err == nil && serr == nil && fi.Mode().IsRegular() {
		// A report written over keeps its mode, as a shell's > would.
		err = os.Chmod(tmp, fi.Mode().Perm())
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

// createBeside creates a new file beside abs (a hidden temporary name) with
// the mode a new file gets from the umask, as a shell's > gives it: a
// report holds the run's errors and stderr tails, so umask 077 keeps it
// private and nothing widens it.
func createBeside(abs string) (*os.File, error) {
	dir, base := filepath.Split(abs)
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !os.IsExist(err) || try == 99 {
			return f, err
		}
	}
}
