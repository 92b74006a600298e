// Command faber runs workflow plans on the local machine: it runs each step as
// a subprocess, in parallel where the plan allows, records every transition in
// an embedded store, and runs the plan's failure handlers exactly as written.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/internal/termquiet"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// Exit codes (SPEC §1).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitPending     = 3
	exitState       = 4
	exitInterrupted = 130
)

// Globals are the flags every command takes.
type Globals struct {
	StateDir    string           `name:"state-dir" env:"FABER_STATE_DIR" default:".faber" placeholder:"DIR" help:"Where runs, their stores and logs live."`
	NoColor     bool             `name:"no-color" help:"Plain text without colours (also when NO_COLOR is set)."`
	Verbose     bool             `short:"v" help:"Say more: debug details on stderr."`
	ShowVersion kong.VersionFlag `name:"version" help:"Print faber's version and exit."`

	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
	// interrupt does what SIGINT does (the TUI calls it for q / Ctrl-C, which
	// arrive as keys in raw mode): first a graceful stop, then hard.
	interrupt func(hard bool)
	// sync is FABER_SYNC: every commit is synced to the device before
	// anything acts on it.
	sync bool
	// owner is set in the background process that runs a run for a
	// faber run in a terminal (detach.go); nil otherwise.
	owner *owner
}

// parseSync reads FABER_SYNC. A value faber does not know is an error, not
// a quiet "no": someone who set FABER_SYNC=y wanted durable commits.
func parseSync(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("FABER_SYNC=%q: set it to 1 to sync every commit to the device, or to 0 (or leave it unset) not to", v)
}

// CLI is faber's command line.
type CLI struct {
	Globals

	Run        RunCmd        `cmd:"" help:"Run a plan: its steps as subprocesses, in parallel where the plan allows."`
	Resume     ResumeCmd     `cmd:"" help:"Continue a stopped, failed or crashed run without re-running what succeeded."`
	Validate   ValidateCmd   `cmd:"" help:"Check a plan without running anything: fields, dependencies, variables, handlers."`
	Graph      GraphCmd      `cmd:"" help:"Print a plan's dependency graph: text, Graphviz dot or JSON; run nothing."`
	Import     ImportCmd     `cmd:"" help:"Convert a Torc workflow or a FABER plan.json into a faber plan (YAML)."`
	List       ListCmd       `cmd:"" help:"List the runs in the state dir, newest first."`
	Status     StatusCmd     `cmd:"" help:"Show one run: every step with its status, attempts and error."`
	Events     EventsCmd     `cmd:"" help:"Show a run's audit trail: every decision, oldest first."`
	Report     ReportCmd     `cmd:"" help:"Write a run's report: one HTML file with a timeline of every attempt (--json: the data)."`
	Logs       LogsCmd       `cmd:"" help:"Print the output of a step's attempt, handler or recovery script."`
	Pending    PendingCmd    `cmd:"" help:"List steps that wait for a decision (pending_failed), with their stderr."`
	Classify   ClassifyCmd   `cmd:"" help:"Decide on a pending_failed step: --retry it or --fail it."`
	Approve    ApproveCmd    `cmd:"" help:"Approve a step (or phase) that awaits approval: it starts (now, or on resume)."`
	Reject     RejectCmd     `cmd:"" help:"Reject a step (or phase) that awaits approval: it fails with --reason."`
	Reset      ResetCmd      `cmd:"" help:"Put steps of a finished run back to pending, so resume runs them again."`
	Prune      PruneCmd      `cmd:"" help:"Remove old finished runs (--keep N, --older-than AGE), never an active one."`
	Cache      CacheCmd      `cmd:"" help:"List or clear the cached step results (steps with inputs: that a run may skip)."`
	Stop       StopCmd       `cmd:"" help:"Stop an active run from another terminal, as Ctrl-C in its owner would."`
	Attach     AttachCmd     `cmd:"" aliases:"watch" help:"Show the live view of a run that another faber process runs; q leaves it, the run goes on."`
	UI         UICmd         `cmd:"" name:"ui" help:"A live terminal view of the runs of every state dir faber has used: filter, sort, open, logs, stop."`
	Mcp        McpCmd        `cmd:"" name:"mcp" help:"Serve the Model Context Protocol on stdio, for AI agents."`
	Recover    RecoverCmd    `cmd:"" help:"Let an AI agent classify a run's pending steps, then resume it."`
	Schema     SchemaCmd     `cmd:"" help:"Print the JSON Schema of the plan format (for editors)."`
	Version    VersionCmd    `cmd:"" help:"Print faber's version (--json: with the commit and build date)."`
	Completion CompletionCmd `cmd:"" help:"Print a shell completion script (bash, zsh, fish)."`
	Help       HelpCmd       `cmd:"" help:"Show help for faber or one of its commands: faber help run."`
	Man        ManCmd        `cmd:"" help:"Print the manual page faber(1) in roff: faber man > ~/.local/share/man/man1/faber.1, then man faber."`
}

const description = `faber runs workflow plans on this machine and does exactly what the plan says
when a step fails: exit-code rules with recovery scripts, then the step's
on_failure handler (stop, continue, retry, or a /command), every decision
recorded. A stopped, failed or crashed run continues with 'faber resume'.

Examples:
  faber validate plan.yaml                 check a plan, run nothing
  faber run plan.yaml                      run it (a live view in a terminal)
  faber run plan.yaml --set dataset=ipeds  override a context variable
  faber status --json <run-id>             every step, as JSON
  faber resume --last                      continue the newest run

Exit codes: 0 success, 1 run failed, 2 usage error or invalid plan,
3 steps await a decision (pending_failed, awaiting_approval), 4 state problem, 130 interrupted.`

// exitError carries an exit code through the command's error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code to an error.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// codeOnly ends the command with a code and no message (the output said it all).
func codeOnly(code int) error { return &exitError{code: code} }

func main() {
	termquiet.Restore() // see package termquiet: TERM as the user set it
	tuneStartGC()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Main runs faber with args and returns the exit code; it never calls os.Exit.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "faber: internal error: %v (please report this)\n", p)
			code = exitState
		}
	}()
	// faber help [command] is faber [command] --help.
	if len(args) > 0 && args[0] == "help" {
		args = append(append([]string{}, args[1:]...), "--help")
	}
	var cli CLI
	if cli.owner = takeOwner(); cli.owner != nil {
		stdout, stderr = cli.owner.out, cli.owner.out
	}
	cli.stdout, cli.stderr, cli.stdin = stdout, stderr, stdin
	exited := -1
	parser, err := kong.New(&cli,
		kong.Name("faber"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, Summary: true}),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { exited = c; panic(kongExit{}) }),
		kong.Bind(&cli.Globals),
		kong.Vars{"version": currentBuild().String()},
	)
	if err != nil {
		fmt.Fprintf(stderr, "faber: %v\n", err)
		return exitState
	}
	if completeArgs(parser) {
		return exitOK
	}
	var kctx *kong.Context
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(kongExit); !ok {
					panic(p)
				}
			}
		}()
		kctx, err = parser.Parse(args)
	}()
	if exited >= 0 {
		if exited != 0 {
			return exitUsage
		}
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "faber: %s\n", lowerFirst(err.Error()))
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			fmt.Fprintf(stderr, "run '%s --help' for usage\n", strings.TrimSpace("faber "+commandPath(pe.Context)))
		}
		return exitUsage
	}
	if os.Getenv("NO_COLOR") != "" {
		cli.NoColor = true
	}
	if cli.sync, err = parseSync(os.Getenv("FABER_SYNC")); err != nil {
		fmt.Fprintf(stderr, "faber: %v\n", err)
		return exitUsage
	}
	switch commandPath(kctx) {
	case "run", "resume", "recover":
		// A closed stdout (faber run plan.yaml | head -1) must not kill
		// faber mid-run: with SIGPIPE caught, a write to it fails with
		// EPIPE instead, the renderers stop writing, and the run finishes
		// and is recorded truthfully. (Caught, not ignored: an ignored
		// signal would be inherited by the steps, and a step's own pipeline
		// would no longer end on it.) Other commands keep the Unix way:
		// `faber list | head -1` ends quietly.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
	}
	// The state dir is resolved once, here: every path faber hands a step,
	// handler, recovery script, end step or child run derives from it, and
	// those processes run in other directories (the plan's, or dir:).
	if cli.StateDir == "" {
		cli.StateDir = ".faber" // FABER_STATE_DIR set but empty: the default
	}
	abs, err := filepath.Abs(cli.StateDir)
	if err != nil {
		fmt.Fprintf(stderr, "faber: cannot resolve the state dir %q: %v\n", cli.StateDir, err)
		return exitState
	}
	cli.StateDir = abs
	err = kctx.Run(&cli.Globals)
	if err == nil {
		return exitOK
	}
	code = exitCode(err)
	var xe *exitError
	if errors.As(err, &xe) && xe.err == nil {
		return code // the command's output said it all
	}
	fmt.Fprintf(stderr, "faber: %s\n", err.Error())
	return code
}

// exitCode is the one map from an error to faber's exit code (SPEC §1).
// Typed errors carry their meaning wherever they surface: an invalid plan
// is a usage error (2); a run that is not there, held by another process,
// or whose store is damaged is a state problem (4). A command may classify
// an error itself (withCode: a bad flag, a run's outcome). Anything else is
// a plain failure (1), never a usage error.
func exitCode(err error) int {
	var (
		xe       *exitError
		inv      *spec.Invalid
		locked   *state.LockedError
		usage    *run.UsageError
		stateErr *run.StateError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xe):
		return xe.code
	case errors.As(err, &inv), errors.As(err, &usage):
		return exitUsage
	case errors.Is(err, state.ErrNotFound), errors.Is(err, state.ErrDamaged), errors.Is(err, state.ErrNoSpace), errors.As(err, &locked), errors.As(err, &stateErr):
		return exitState
	}
	return exitFailed
}

type kongExit struct{}

// HelpCmd is listed for faber help; Main turns "faber help X" into "faber X
// --help" before parsing, so its Run never runs.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command."`
}

// Run shows the top-level help (reached only through odd argument orders).
func (c *HelpCmd) Run(g *Globals) error { return nil }

func commandPath(ctx *kong.Context) string {
	s := strings.TrimSpace(strings.TrimPrefix(ctx.Command(), "faber"))
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// signalContext is cancelled by the first SIGINT/SIGTERM (or trigger(false));
// hard is closed by the second (or trigger(true)).
func signalContext() (ctx context.Context, hard <-chan struct{}, trigger func(hard bool), stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	h := make(chan struct{})
	var once sync.Once
	closeHard := func() { once.Do(func() { close(h) }) }
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-ch:
				n++
				if n == 1 {
					cancel()
				} else {
					closeHard()
				}
			case <-done:
				return
			}
		}
	}()
	trigger = func(hard bool) {
		if hard {
			closeHard()
		}
		cancel()
	}
	return ctx, h, trigger, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}
