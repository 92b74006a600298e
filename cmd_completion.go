package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// CompletionCmd prints a shell's completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// Help explains how to install the scripts.
func (c *CompletionCmd) Help() string {
	return `Prints the lines that make your shell complete faber's commands, flags, plan
files (*.yaml, *.yml, *.json, and only the directories that hold one), a plan's
step ids (faber run PLAN <Tab>, --from), run ids (from the state dir,
--state-dir or FABER_STATE_DIR), a run's step ids (faber logs RUN <Tab>,
faber logs --last <Tab>, classify, reset --step) and run statuses (faber list
--status <Tab>). The shell asks faber itself for the candidates.

  bash:  echo 'source <(faber completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(faber completion zsh)' >> ~/.zshrc
  fish:  faber completion fish > ~/.config/fish/completions/faber.fish

The manual page comes from faber too (a go install ships none):

  mkdir -p ~/.local/share/man/man1 && faber man > ~/.local/share/man/man1/faber.1
  man faber

Examples:
  source <(faber completion bash)       try it in this shell
  faber completion bash | sudo tee /etc/bash_completion.d/faber     for every user`
}

// completionScripts are the shell lines that hand completion to faber
// (posener/complete's protocol, which kongplete answers in Main).
var completionScripts = map[string]string{
	"bash": "complete -o default -C %[1]q %[2]s\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C %[1]q %[2]s\n",
	"fish": `function __complete_%[2]s
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[1]q
end
complete -f -c %[2]s -a "(__complete_%[2]s)"
`,
}

// Run prints the script for the shell.
func (c *CompletionCmd) Run(g *Globals) error {
	bin, err := os.Executable()
	if err != nil {
		bin = "faber"
	}
	_, err = fmt.Fprintf(g.stdout, completionScripts[c.Shell], bin, "faber")
	return err
}

// complete answers the shell when it asks for candidates (COMP_LINE is set);
// it returns false when faber was not asked.
func completeArgs(parser *kong.Kong) (asked bool) {
	if os.Getenv("COMP_LINE") == "" {
		return false
	}
	done := false
	kongplete.Complete(parser,
		kongplete.WithPredictor("plan", complete.PredictFunc(predictPlans)),
		kongplete.WithPredictor("run", complete.PredictFunc(predictRuns)),
		kongplete.WithPredictor("step", complete.PredictFunc(predictSteps)),
		kongplete.WithPredictor("runstep", complete.PredictFunc(predictRunSteps)),
		kongplete.WithPredictor("runstatus", complete.PredictSet(runStatuses...)),
		kongplete.WithExitFunc(func(int) { done = true }),
		kongplete.WithErrorHandler(func(error) {}),
	)
	return done
}

// runStatuses are the statuses a run can have (faber list --status).
var runStatuses = []string{"in_progress", "success", "failed", "remediation_failed", "pending_failed", "interrupted"}

// planFiles offers plan files (*.yaml, *.yml, *.json) and directories.
var planFiles = complete.PredictOr(
	complete.PredictFiles("*.yaml"), complete.PredictFiles("*.yml"), complete.PredictFiles("*.json"))

// predictPlans offers plan files, and only the directories that hold one
// (in them or one level down): `faber run ex<Tab>` offers examples/, not
// exec/.
func predictPlans(a complete.Args) []string {
	var out []string
	for _, c := range planFiles.Predict(a) {
		if slices.Contains(out, c) {
			continue // a directory comes once from each pattern
		}
		if st, err := os.Stat(c); err == nil && st.IsDir() && !holdsPlan(c, 1) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// holdsPlan reports whether dir has a plan file in it, or depth levels of
// directories down; it looks at no more than 200 entries per directory.
func holdsPlan(dir string, depth int) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	entries, _ := f.ReadDir(200)
	f.Close()
	for _, e := range entries {
		if !e.IsDir() && isPlanName(e.Name()) {
			return true
		}
	}
	if depth == 0 {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && holdsPlan(filepath.Join(dir, e.Name()), depth-1) {
			return true
		}
	}
	return false
}

func isPlanName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// completionStateDir is the state dir the command line names (--state-dir
// DIR), else FABER_STATE_DIR, else .faber.
func completionStateDir(a complete.Args) string {
	dir := os.Getenv("FABER_STATE_DIR")
	all := lineWords()
	if a.Last != "" {
		all = append(all, a.Last)
	}
	for i, w := range all {
		if w == "--state-dir" && i+1 < len(all) {
			dir = all[i+1]
		} else if v, ok := strings.CutPrefix(w, "--state-dir="); ok {
			dir = v
		}
	}
	if dir == "" {
		dir = ".faber"
	}
	return filepath.Clean(dir)
}

// stepCommands take a step after the run (logs RUN STEP, classify RUN
// STEP), or as their one argument with --last.
var stepCommands = map[string]bool{"logs": true, "classify": true}

// predictRunSteps offers the step ids of the run the command line names:
// its run-id argument (a unique prefix will do), or the newest run with
// --last. Fan-out items are offered too: each has its own logs.
func predictRunSteps(a complete.Args) []string {
	dir := completionStateDir(a)
	line := lineWords()
	words := positionals(line)
	last := slices.Contains(line, "--last")
	id := ""
	if len(words) > 2 && !last {
		id = words[2] // faber, the command, the run
	}
	metas, err := state.List(dir)
	if err != nil || len(metas) == 0 {
		return nil
	}
	if id == "" && !last {
		return nil
	}
	runID := ""
	for _, m := range metas {
		if id == "" || m.RunID == id {
			runID = m.RunID
			break
		}
		if strings.HasPrefix(m.RunID, id) {
			if runID != "" {
				return nil // ambiguous
			}
			runID = m.RunID
		}
	}
	if id == "" {
		runID = metas[0].RunID // List: newest first
	}
	if runID == "" {
		return nil
	}
	v, _, _, err := run.Load(dir, runID)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(v.Steps))
	for _, st := range v.Steps {
		ids = append(ids, st.ID)
	}
	return ids
}

// lineWords are the completed words of the command line the shell asks
// about (COMP_LINE up to COMP_POINT, the word being typed left out): the
// predictors see only the words after their command, and these need the
// command and the run before them.
func lineWords() []string {
	line := os.Getenv("COMP_LINE")
	if p, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && p >= 0 && p <= len(line) {
		line = line[:p]
	}
	words := strings.Fields(line)
	if len(words) > 0 && !strings.HasSuffix(line, " ") {
		words = words[:len(words)-1]
	}
	return words
}

// positionals are the words of a command line that are neither flags nor
// flag values: the command, then its arguments.
func positionals(words []string) []string {
	var out []string
	for i, w := range words {
		if strings.HasPrefix(w, "-") || (i > 0 && takesValue(words[i-1])) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// takesValue reports whether a flag word is followed by its value as the
// next word (the flags of the commands with a run and a step).
func takesValue(w string) bool {
	switch w {
	case "--state-dir", "--attempt", "--reason", "--memory", "--timeout", "--step":
		return true
	}
	return false
}

// predictRuns lists the run ids of the state dir the command line names
// (--state-dir DIR), else FABER_STATE_DIR, else .faber. After --last,
// `faber logs --last <Tab>` wants a step, not a run: it offers the newest
// run's steps.
func predictRuns(a complete.Args) []string {
	if line := lineWords(); slices.Contains(line, "--last") {
		if w := positionals(line); len(w) > 1 && stepCommands[w[1]] {
			return predictRunSteps(a)
		}
	}
	metas, err := state.List(completionStateDir(a))
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(metas))
	for _, m := range metas {
		ids = append(ids, m.RunID)
	}
	return ids
}

// predictSteps lists the step ids of the plan file on the command line
// (the first word that names a .yaml, .yml or .json file), for
// `faber run PLAN STEP...` and --from: a fan-out by its own id, not its
// items. A plan that does not load offers none.
func predictSteps(a complete.Args) []string {
	for _, w := range a.All {
		if ext := strings.ToLower(filepath.Ext(w)); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		p, err := spec.Load(w, spec.Options{NoProgramChecks: true})
		if err != nil {
			return nil
		}
		var ids []string
		for _, s := range p.Steps {
			if s.Item == nil {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	return nil
}
