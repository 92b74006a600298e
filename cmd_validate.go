package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
)

// ValidateCmd checks plans.
type ValidateCmd struct {
	Plans   []string `arg:"" sep:"none" name:"plan" predictor:"plan" help:"Plan files (.yaml, .yml or .json); several may be given."`
	Set     setFlags `name:"set" placeholder:"KEY=VALUE" help:"Override a context variable (repeatable; one --set is one KEY=VALUE, commas included)."`
	SetFile setFlags `name:"set-file" placeholder:"KEY=PATH" help:"Set a context variable to a file's content, one trailing newline dropped (repeatable): a secret kept out of argv."`
	Strict  bool     `help:"Treat warnings (such as an invalid on_failure value) as errors."`
	JSON    bool     `name:"json" help:"Print {valid, errors, warnings} as JSON (one object per plan, one per line when several)."`
}

// Help explains validate.
func (c *ValidateCmd) Help() string {
	return `Checks everything that can be checked before a run: fields and their types,
ids, dependencies and cycles, failure handlers and their rules, durations,
{variables}, that every /command resolves, and that every step's request
(cpus, memory, gpus) fits the capacity a run would have without flags (the
plan's resources:, else this machine's). Nothing runs, nothing is
written. Exits 2 if any plan is invalid.

Examples:
  faber validate plan.yaml
  faber validate examples/*.yaml
  faber validate plan.yaml --set dataset=ipeds --strict --json`
}

type validateOut struct {
	Valid    bool              `json:"valid"`
	Errors   []spec.Diagnostic `json:"errors"`
	Warnings []spec.Diagnostic `json:"warnings"`
}

// Run validates each plan; invalid plans exit 2.
func (c *ValidateCmd) Run(g *Globals) error {
	opts, err := parseSets(setSources{sets: c.Set, files: c.SetFile, env: os.Environ()})
	if err != nil {
		return withCode(exitUsage, err)
	}
	opts.Strict = c.Strict
	var firstErr error
	for _, path := range c.Plans {
		if err := c.one(g, path, opts); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (c *ValidateCmd) one(g *Globals, path string, opts spec.Options) error {
	if fi, err := os.Stat(path); err == nil {
		tuneGCReader(fi.Size())
	}
	plan, err := spec.Load(path, opts)
	if err == nil {
		// Every step's request must fit the capacity a run would have
		// without flags: the plan's resources:, else this machine's.
		if _, cerr := run.Capacity(plan, spec.Capacity{}); cerr != nil {
			inv := cerr.(*spec.Invalid)
			inv.Warnings = plan.Warnings
			plan, err = nil, inv
		}
	}
	var inv *spec.Invalid
	if err != nil && !errors.As(err, &inv) {
		if c.JSON {
			out := validateOut{Errors: []spec.Diagnostic{{File: path, Message: err.Error()}}, Warnings: []spec.Diagnostic{}}
			c.print(g, out)
			return codeOnly(exitUsage)
		}
		return withCode(exitUsage, err)
	}
	if c.JSON {
		out := validateOut{Valid: err == nil, Errors: []spec.Diagnostic{}, Warnings: []spec.Diagnostic{}}
		if inv != nil {
			out.Errors = append(out.Errors, inv.Errors...)
			out.Warnings = append(out.Warnings, inv.Warnings...)
		} else if plan != nil {
			out.Warnings = append(out.Warnings, plan.Warnings...)
		}
		c.print(g, out)
		if err != nil {
			return codeOnly(exitUsage)
		}
		return nil
	}
	if err != nil {
		// Every error, one line each, in plan order (run shows the first).
		for _, w := range inv.Warnings {
			fmt.Fprintf(g.stderr, "faber: warning: %s\n", w.Error())
		}
		if len(inv.Errors) == 0 {
			fmt.Fprintf(g.stderr, "faber: %s\n", inv.Error())
		}
		for _, d := range inv.Errors {
			fmt.Fprintf(g.stderr, "faber: %s\n", d.Error())
		}
		return codeOnly(exitUsage)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(g.stderr, "faber: warning: %s\n", w.Error())
	}
	fmt.Fprintf(g.stdout, "%s: valid — plan %q, %d %s in %d %s%s\n", path, plan.Name,
		len(plan.Steps), plural(len(plan.Steps), "step", "steps"), len(plan.Phases), plural(len(plan.Phases), "phase", "phases"), endNote(plan))
	return nil
}

func (c *ValidateCmd) print(g *Globals, out validateOut) {
	if len(c.Plans) > 1 {
		b, _ := json.Marshal(out)
		fmt.Fprintln(g.stdout, string(b))
		return
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(g.stdout, string(b))
}

func endNote(p *spec.Plan) string {
	if p.End != nil {
		return ", with an end step"
	}
	return ""
}

// planError is the one line printed for an invalid plan: the first error,
// and how many more there are.
func planError(inv *spec.Invalid) error {
	if len(inv.Errors) == 0 {
		return inv
	}
	msg := inv.FirstCause().Error()
	if n := len(inv.Errors) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more %s; faber validate lists all)", n, plural(n, "error", "errors"))
	}
	return errors.New(msg)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxSetFile is the largest value --set-file reads: a program gets each
// value in one environment variable (FABER_CTX_<KEY>), and Linux takes at
// most 128 KiB in one.
const maxSetFile = 64 << 10

// setSources are the ways a command is given context values: --set
// KEY=VALUE, --set-file KEY=PATH, and FABER_SET_<KEY> in the environment
// (env, os.Environ's form). The command line wins over the environment;
// one key given by both --set and --set-file is an error.
type setSources struct {
	sets  []string
	files []string
	env   []string
}

// parseSets turns the context values given to a command into load options.
func parseSets(src setSources) (spec.Options, error) {
	opts := spec.Options{Sets: map[string]string{}, SetFrom: map[string]string{}}
	add := func(k, v, from string) {
		if _, dup := opts.Sets[k]; !dup {
			opts.SetKeys = append(opts.SetKeys, k)
		}
		opts.Sets[k] = v
		opts.SetFrom[k] = from
	}
	for _, s := range src.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return opts, fmt.Errorf("--set %q: want KEY=VALUE", s)
		}
		add(k, v, "--set")
	}
	for _, s := range src.files {
		k, path, ok := strings.Cut(s, "=")
		if !ok || k == "" || path == "" {
			return opts, fmt.Errorf("--set-file %q: want KEY=PATH (the value is the file's content)", s)
		}
		if opts.SetFrom[k] == "--set" {
			return opts, fmt.Errorf("--set-file %s: %s is given by --set too; give it once", k, k)
		}
		v, err := readSetFile(path)
		if err != nil {
			return opts, fmt.Errorf("--set-file %s: %w", k, err)
		}
		add(k, v, "--set-file")
	}
	var env []string
	for _, e := range src.env {
		if name, _, ok := strings.Cut(e, "="); ok && strings.HasPrefix(name, exec.SetEnvPrefix) {
			env = append(env, e)
		}
	}
	sort.Strings(env) // the environment has no order worth keeping
	for _, e := range env {
		name, v, _ := strings.Cut(e, "=")
		up := strings.TrimPrefix(name, exec.SetEnvPrefix)
		if up == "" || up != strings.ToUpper(up) {
			return opts, fmt.Errorf("environment %s: want %s<KEY> with KEY in upper case (FABER_SET_API_KEY sets api_key)", name, exec.SetEnvPrefix)
		}
		k := strings.ToLower(up)
		if _, given := opts.Sets[k]; given {
			continue // the command line wins
		}
		add(k, v, name)
	}
	return opts, nil
}

// readSetFile reads the value of --set-file: the file's bytes, without one
// trailing newline (LF or CRLF), as `echo value > file` writes it. Only a
// regular file of at most maxSetFile bytes is read.
func readSetFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %w", unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxSetFile {
		return "", fmt.Errorf("%s is %d bytes; a value may be at most %d bytes (64 KiB)", path, fi.Size(), maxSetFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %w", unwrapPath(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSetFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(b) > maxSetFile {
		return "", fmt.Errorf("%s is more than %d bytes; a value may be at most %d bytes (64 KiB)", path, maxSetFile, maxSetFile)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) < len(b) {
		s = strings.TrimSuffix(s, "\r")
	}
	return s, nil
}

// setFlags holds the values of --set or --set-file byte for byte. kong's
// string mapper passes a value through JSON, which turns invalid UTF-8 into
// U+FFFD; SPEC §4.1 promises programs every value unchanged. One flag is
// one KEY=VALUE (or KEY=PATH).
type setFlags []string

// Decode takes the flag's value as the shell passed it.
func (s *setFlags) Decode(ctx *kong.DecodeContext) error {
	flag := "--" + ctx.Value.Name
	t, err := ctx.Scan.PopValue(flag)
	if err != nil {
		return err
	}
	v, ok := t.Value.(string)
	if !ok {
		return fmt.Errorf("%s wants KEY=VALUE, not %v", flag, t.Value)
	}
	*s = append(*s, v)
	return nil
}
