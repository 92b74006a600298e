// The plan format: the raw structures a plan file may contain. They are the
// plan reference the decoder walks and faber schema describes.

package spec

// These structs are the single definition of the plan format: the decoder
// walks them by reflection (every key a struct accepts is its `yaml` tag) and
// Schema generates the JSON Schema from them, so the two cannot drift.
//
// Tags:
//   yaml:"key"         the accepted key; yaml:",inline" flattens an embedded struct
//   doc:"..."          description in the JSON Schema
//   required:"true"    the key must be present
//   ident:"step"       this scalar names the object in messages: step "deploy"
//   label:"end step"   messages about this object say label instead of its path
//   enum:"a,b"         allowed values of a string
//   pattern:"^re$"     a string must match; on a map, every key must match
//   min:"1"            the least an integer may be
//
// A field's type is a leaf (leaf.go), which decodes itself and gives its own
// schema, every form it takes included, or a raw struct (or a list of them).
// Every field has a doc tag (TestSchemaDescribesEveryField holds it).

// rawMeta is embedded in every raw object: where it is and how to name it.
type rawMeta struct {
	Pos   Pos
	Where string
	// keys are the keys present with their positions: a slice, not a map,
	// as objects have few keys and a plan may have 100,000 of them.
	keys []keyAt
}

type keyAt struct {
	key string
	pos Pos
}

func (m *rawMeta) meta() *rawMeta { return m }

func (m *rawMeta) find(key string) (Pos, bool) {
	for _, k := range m.keys {
		if k.key == key {
			return k.pos, true
		}
	}
	return Pos{}, false
}

// has reports whether key was written in the object.
func (m *rawMeta) has(key string) bool {
	_, ok := m.find(key)
	return ok
}

// keyPos returns the position of key, or of the object when the key is absent.
func (m *rawMeta) keyPos(key string) Pos {
	if p, ok := m.find(key); ok {
		return p
	}
	return m.Pos
}

type rawPlan struct {
	rawMeta
	Name             str               `yaml:"name" required:"true" doc:"Name of the plan; part of every run id."`
	Description      str               `yaml:"description" doc:"What the plan does."`
	Context          omap              `yaml:"context" pattern:"^[a-z_][a-z0-9_]*$" doc:"Variables for {name} substitution; --set overrides and adds. Values are scalars, kept as written."`
	Secrets          list[str]         `yaml:"secrets" doc:"Context variables (from context: or --set) whose values are secret: programs get them, everything faber records or shows masks them as ***."`
	Jobs             intv              `yaml:"jobs" doc:"Maximum number of steps running at once (default: CPU count; --jobs overrides)." min:"1"`
	Shell            str               `yaml:"shell" doc:"Shell for run scripts, run as <shell> -c <script> (default sh; cmd on Windows)."`
	Env              omap              `yaml:"env" doc:"Environment variables added to every step; values may use {name} substitution."`
	UsePendingFailed boolv             `yaml:"use_pending_failed" doc:"A failure no rule matched, on a step without explicit on_failure, becomes pending_failed (awaiting classification)."`
	StopMode         str               `yaml:"stop_mode" enum:"drain,cancel" doc:"On a stop: drain lets running steps finish (default); cancel terminates them."`
	Agent            words             `yaml:"agent" doc:"Agent command (argv, or a string split as shell words) that runs /commands without a registry entry; the slash-command line is its last argument."`
	Commands         omap              `yaml:"commands" pattern:"^/[A-Za-z0-9][A-Za-z0-9._:/-]*$" doc:"Slash-command registry: /name -> command line; the /command's arguments are appended."`
	FailureHandlers  list[*rawHandler] `yaml:"failure_handlers" doc:"Named lists of exit-code rules that steps refer to with failure_handler."`
	HandlerTimeout   durv              `yaml:"handler_timeout" doc:"Timeout of on_failure handlers (Go duration, default 30m)."`
	KillGrace        durv              `yaml:"kill_grace" doc:"Time between SIGTERM and SIGKILL when a step is stopped (Go duration, default 10s)."`
	Memory           sizev             `yaml:"memory" doc:"Default memory limit of every step's attempt (512MiB, 2GiB; binary units): a cgroup locally where faber can make one, --mem on Slurm."`
	CPUs             intv              `yaml:"cpus" min:"1" doc:"Default CPU limit of every step's attempt: a cgroup cpu.max locally where faber can make one, --cpus-per-task on Slurm."`
	Resources        *rawResources     `yaml:"resources" doc:"The run's capacity: the CPUs, memory and GPUs its running steps may reserve at once (each optional: else this machine's; --cpus, --memory, --gpus override)."`
	Pools            counts            `yaml:"pools" pattern:"^[a-z0-9][a-z0-9._-]*$" doc:"Pools of shared services: name -> how many steps may hold it at once (at least 1); a step holds one with pool: or pools:."`
	Executor         str               `yaml:"executor" enum:"local,slurm,sge" doc:"Where steps run: local (default), slurm or sge (Grid Engine)."`
	Slurm            *rawSlurm         `yaml:"slurm" doc:"Slurm settings for steps run with executor: slurm."`
	Sge              *rawSge           `yaml:"sge" doc:"Grid Engine settings for steps run with executor: sge."`
	Phases           list[*rawPhase]   `yaml:"phases" doc:"Named groups of steps, run in order (use either phases or steps)."`
	Steps            stepList          `yaml:"steps" doc:"The steps of a single phase named main (use either phases or steps)."`
	End              *rawEnd           `yaml:"end" label:"end step" doc:"A step run at the end of every session that was not interrupted, whatever happened."`
	Outputs          omap              `yaml:"outputs" pattern:"^[A-Za-z_][A-Za-z0-9_]*$" doc:"Values the plan publishes when it runs as a sub-plan and succeeds: KEY -> a template ({steps.<id>.outputs.<KEY>}, {name}); the parent's plan: step publishes them."`
	Budget           *rawBudget        `yaml:"budget" doc:"What the plan's steps may spend together over the run (max_cost_usd, max_turns, max_attempts), as their processes report it in $FABER_RESULT: once spent, no step starts and no retry or handler runs."`
	Notify           list[*rawNotify]  `yaml:"notify" doc:"Commands run on chosen events (run_finished, run_failed, step_failed, awaiting_decision, run_interrupted), each given the event as JSON on stdin; fire-and-forget: they never change an outcome."`
}

// rawResources is the plan's resources: block, the run's capacity.
type rawResources struct {
	rawMeta
	CPUs   intv  `yaml:"cpus" min:"1" doc:"CPUs the running steps may reserve at once (default: this machine's; --cpus overrides)."`
	Memory sizev `yaml:"memory" doc:"Memory the running steps may reserve at once (512MiB, 24GiB; binary units; default: this machine's physical memory; --memory overrides)."`
	GPUs   intv  `yaml:"gpus" min:"1" doc:"GPU devices, indices 0..N-1 (default: the devices nvidia-smi -L lists, else none; --gpus overrides)."`
}

type rawPhase struct {
	rawMeta
	Name     str        `yaml:"name" required:"true" ident:"phase" doc:"Name of the phase."`
	Parallel boolv      `yaml:"parallel" doc:"Steps of a parallel phase all depend on the previous phase only; otherwise each step needs the previous one."`
	Steps    stepList   `yaml:"steps" required:"true" doc:"The steps of the phase."`
	Budget   *rawBudget `yaml:"budget" doc:"What the phase's steps may spend together over the run (max_cost_usd, max_turns, max_attempts)."`
	Approval approvalv  `yaml:"approval" doc:"A gate decided once for the phase: its entry steps (those with no needs inside the phase) wait, awaiting_approval, until faber approve RUN PHASE (true, a prompt, or {prompt, timeout, on_timeout})."`
}

// rawStepBody holds the fields shared by steps and the end step.
type rawStepBody struct {
	Name           str                `yaml:"name" doc:"Display name (default: the id)."`
	Description    str                `yaml:"description" doc:"What the step does."`
	Run            str                `yaml:"run" doc:"Shell script run as <shell> -c, or a /command line; {name} is substituted safely."`
	Prompt         str                `yaml:"prompt" doc:"Alias of run (for plans written for agent orchestrators)."`
	Timeout        durv               `yaml:"timeout" doc:"Time limit of one attempt (Go duration); a timeout exits 124."`
	Env            omap               `yaml:"env" doc:"Environment variables of the step; values may use {name} substitution."`
	Dir            str                `yaml:"dir" doc:"Working directory, relative to the plan file's directory."`
	Shell          str                `yaml:"shell" doc:"Shell for this step's run script (overrides the plan's)."`
	FailureHandler str                `yaml:"failure_handler" doc:"Name of the failure handler whose exit-code rules apply."`
	ResultHandling *rawResultHandling `yaml:"result_handling" doc:"What happens when the rules decline a failure."`
	HandlerTimeout durv               `yaml:"handler_timeout" doc:"Timeout of this step's on_failure handler (Go duration)."`
	KillGrace      durv               `yaml:"kill_grace" doc:"Time between SIGTERM and SIGKILL for this step (Go duration)."`
	Memory         sizev              `yaml:"memory" doc:"Memory limit of one attempt (512MiB, 2GiB; binary units), overriding the plan's: a cgroup locally where faber can make one, --mem on Slurm."`
	CPUs           intv               `yaml:"cpus" min:"1" doc:"CPU limit of one attempt, overriding the plan's: a cgroup cpu.max locally where faber can make one, --cpus-per-task on Slurm."`
	Executor       str                `yaml:"executor" enum:"local,slurm,sge" doc:"Where this step runs: local, slurm or sge (overrides the plan's)."`
	Slurm          *rawSlurm          `yaml:"slurm" doc:"Slurm settings of this step (merged over the plan's)."`
	Sge            *rawSge            `yaml:"sge" doc:"Grid Engine settings of this step (merged over the plan's)."`
	Budget         *rawBudget         `yaml:"budget" doc:"What the step may spend over the run (max_cost_usd, max_turns, max_attempts), its attempts and handlers together; on a fan-out, each item: once spent, no retry or handler runs and the step ends failure with cause budget."`
}

type rawStep struct {
	rawMeta
	ID          str `yaml:"id" required:"true" ident:"step" pattern:"^[a-z0-9][a-z0-9._-]*$" doc:"Unique id of the step."`
	rawStepBody `yaml:",inline"`
	Needs       list[str]  `yaml:"needs" doc:"Ids of the steps this one depends on; replaces the implicit dependencies (needs: [] for none)."`
	Plan        str        `yaml:"plan" doc:"A child plan file to run as a linked child run (instead of run), relative to this plan's directory."`
	Context     omap       `yaml:"context" pattern:"^[a-z_][a-z0-9_]*$" doc:"Context passed to the child plan (with plan:); values may use {name} substitution."`
	Foreach     fanNode    `yaml:"foreach" doc:"Fan out over a list (scalars, or mappings whose fields are {item.<name>}), or {range: [from, to, step]}, {glob: pattern}, {lines: file}, {from: {steps.<id>.outputs.<KEY>}}: one step <id>[<key>] per item, {item} its value."`
	Matrix      matrixNode `yaml:"matrix" doc:"Fan out over every combination of name: [values] (exclude: a list of combinations to leave out); {item.<name>} is a value, {item} the combination."`
	MaxParallel intv       `yaml:"max_parallel" min:"1" doc:"At most this many items of the fan-out run at once (within jobs)."`
	When        str        `yaml:"when" doc:"A condition (expr language) over steps.<id>.status, steps.<id>.outputs.<KEY>, context.<key> and item, evaluated when the step is ready: false makes it skipped."`
	GPUs        intv       `yaml:"gpus" min:"0" doc:"GPU devices the step requests (default 0): while it runs it holds that many of the run's, named in CUDA_VISIBLE_DEVICES and FABER_GPUS."`
	Pool        str        `yaml:"pool" doc:"A pool of the plan's pools: that the step holds one unit of while it runs (or pools:, not both)."`
	Pools       list[str]  `yaml:"pools" doc:"Pools of the plan's pools: that the step holds one unit of each while it runs (or pool:, not both)."`
	Approval    approvalv  `yaml:"approval" doc:"A gate: the step waits, awaiting_approval, before it starts until faber approve or reject decides (true, a prompt, or {prompt, timeout, on_timeout}); on a fan-out, one gate before its first item."`
	rawCache    `yaml:",inline"`
}

type rawEnd struct {
	rawMeta
	rawStepBody `yaml:",inline"`
}

type rawResultHandling struct {
	rawMeta
	OnFailure  onFailure `yaml:"on_failure" doc:"stop (default), continue, retry, a /command line, or a structured handler {command, args, ...}."`
	MaxRetries intv      `yaml:"max_retries" min:"0" doc:"Retries granted by on_failure retry or a handler command (default 1)."`
}

type rawStructured struct {
	rawMeta
	Command        str   `yaml:"command" doc:"The /command (or absolute program path) to run."`
	Args           args  `yaml:"args" doc:"Arguments: --key value; true gives --key alone, false omits it."`
	RetryOnSuccess boolv `yaml:"retry_on_success" doc:"Retry the step when the handler succeeds (default true)."`
	MaxRetries     intv  `yaml:"max_retries" min:"0" doc:"How many times the handler may run and retry the step (default 1)."`
	HandlerTimeout durv  `yaml:"handler_timeout" doc:"Timeout of the handler (Go duration, default 30m)."`
}

type rawHandler struct {
	rawMeta
	Name  str            `yaml:"name" required:"true" ident:"failure handler" doc:"Name that steps refer to with failure_handler."`
	Rules list[*rawRule] `yaml:"rules" required:"true" doc:"Exit-code rules; the first rule listing the exit code wins, else the first catch-all."`
}

type rawRule struct {
	rawMeta
	ExitCodes      list[intv] `yaml:"exit_codes" doc:"Exit codes this rule matches (124 = timeout, 128+N = signal N)."`
	MatchAll       boolv      `yaml:"match_all_exit_codes" doc:"Match any failure (catch-all)."`
	StderrMatches  str        `yaml:"stderr_matches" doc:"RE2 regexp that the last 64 KiB of stderr must also match."`
	RecoveryScript str        `yaml:"recovery_script" doc:"Shell script run before the retry; may use {error}, {exit_code}, {stdout_file}, {stderr_file}."`
	MaxRetries     intv       `yaml:"max_retries" min:"0" doc:"Retries this rule grants a step per run session (default 3; 0 = never retry)."`
	Delay          durv       `yaml:"delay" doc:"Wait before the retry (Go duration)."`
	Backoff        str        `yaml:"backoff" enum:"fixed,exponential" doc:"fixed (default) or exponential (the delay doubles on each retry)."`
	MaxDelay       durv       `yaml:"max_delay" doc:"Cap of an exponential delay (Go duration)."`
	On             list[str]  `yaml:"on" doc:"Causes this rule matches besides exit_codes: oom (killed for memory), timeout (a time limit), rejected (an approval gate rejected the step), budget (a budget was spent: such a failure is never retried)."`
	MemoryFactor   factorv    `yaml:"memory_factor" doc:"The retry gets the failed attempt's memory limit times this (1 to 100)."`
	MaxMemory      sizev      `yaml:"max_memory" doc:"Cap of the memory that memory_factor grows to."`
	TimeoutFactor  factorv    `yaml:"timeout_factor" doc:"The retry gets the failed attempt's timeout times this (1 to 100)."`
	MaxTimeout     durv       `yaml:"max_timeout" doc:"Cap of the timeout that timeout_factor grows to (Go duration)."`
}

type rawSlurm struct {
	rawMeta
	Partition str   `yaml:"partition" doc:"Slurm partition (-p)."`
	Account   str   `yaml:"account" doc:"Slurm account (-A)."`
	QOS       str   `yaml:"qos" doc:"Slurm quality of service."`
	CPUs      intv  `yaml:"cpus" min:"1" doc:"CPUs per task."`
	Mem       str   `yaml:"mem" doc:"Memory, as Slurm writes it (4G)."`
	GPUs      str   `yaml:"gpus" doc:"GPUs, as Slurm writes it (2, or a100:2)."`
	Time      str   `yaml:"time" doc:"Slurm time limit (1:00:00)."`
	ExtraArgs words `yaml:"extra_args" doc:"Extra srun arguments (a list, or a string split as shell words)."`
	Mode      str   `yaml:"mode" enum:"batch,blocking" doc:"How attempts run: batch (sbatch: jobs are submitted, polled, and outlive faber) or blocking (one srun per attempt, for interactive use)."`
}

type rawSge struct {
	rawMeta
	PE             str   `yaml:"pe" doc:"Parallel environment that grants cpus (qsub -pe PE N; e.g. smp). Without it cpus is not requested."`
	MemoryResource str   `yaml:"memory_resource" doc:"Resource that memory requests (qsub -l RESOURCE=bytes; default h_vmem)."`
	MemoryPerSlot  boolv `yaml:"memory_per_slot" doc:"Divide memory by cpus (with pe), for a resource Grid Engine counts per slot such as h_vmem: the job as a whole then gets memory."`
	Queue          str   `yaml:"queue" doc:"Grid Engine queue (-q)."`
	Project        str   `yaml:"project" doc:"Grid Engine project (-P)."`
	ExtraArgs      words `yaml:"extra_args" doc:"Extra qsub/qrsh arguments (a list, or a string split as shell words)."`
	Mode           str   `yaml:"mode" enum:"batch,blocking" doc:"How attempts run: batch (qsub: jobs are submitted, polled, and outlive faber) or blocking (one qrsh -now no per attempt, for interactive use)."`
}
