package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

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
files (*.yaml, *.yml, *.json) and run ids (from the state dir, --state-dir or
FABER_STATE_DIR). The shell asks faber itself for the candidates.

  bash:  echo 'source <(faber completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(faber completion zsh)' >> ~/.zshrc
  fish:  faber completion fish > ~/.config/fish/completions/faber.fish`
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
		kongplete.WithPredictor("plan", complete.PredictOr(
			complete.PredictFiles("*.yaml"), complete.PredictFiles("*.yml"), complete.PredictFiles("*.json"))),
		kongplete.WithPredictor("run", complete.PredictFunc(predictRuns)),
		kongplete.WithPredictor("step", complete.PredictFunc(predictSteps)),
		kongplete.WithExitFunc(func(int) { done = true }),
		kongplete.WithErrorHandler(func(error) {}),
	)
	return done
}

// predictRuns lists the run ids of the state dir the command line names
// (--state-dir DIR), else FABER_STATE_DIR, else .faber.
func predictRuns(a complete.Args) []string {
	dir := os.Getenv("FABER_STATE_DIR")
	for i, w := range a.All {
		if w == "--state-dir" && i+1 < len(a.All) {
			dir = a.All[i+1]
		} else if v, ok := strings.CutPrefix(w, "--state-dir="); ok {
			dir = v
		}
	}
	if dir == "" {
		dir = ".faber"
	}
	metas, err := state.List(filepath.Clean(dir))
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
