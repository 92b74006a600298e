package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/internal/lazyre"
	"gopkg.in/yaml.v3"
)

// torcJob is one job of a Torc workflow while it is converted.
type torcJob struct {
	node    *yaml.Node
	name    string     // as written (a template when parameterized)
	nameN   *yaml.Node // the name's node
	id      string
	params  []param    // parameters, in file order (nil: a plain job)
	mode    string     // product (default) or zip
	modeN   *yaml.Node // parameter_mode's node
	combos  []map[string]string
	names   []string // the concrete names (one per combination)
	fields  map[string]field
	idx     int      // position among the jobs kept (needs are listed in this order)
	needs   []string // ids of the jobs it needs, in job order
	needSet map[int]bool
	needIdx []int       // needSet's keys, in the order found
	udIn    []torcUDUse // user data it reads (input_user_data, regexes, ${user_data.input.X})
	udOut   []torcUDUse // user data it writes
}

// param is one Torc parameter with its expanded values.
type param struct {
	name   string
	node   *yaml.Node
	values []string
}

// torcParamRef matches {param} and {param:spec} in Torc names and commands.
var torcParamRef = lazyre.New(`\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}]*))?\}`)

// torcFileRef matches ${files.input.NAME} and ${files.output.NAME}; NAME
// may hold {param} placeholders.
var torcFileRef = lazyre.New(`\$\{files\.(input|output)\.((?:[^{}]|\{[^{}]*\})+)\}`)

// torcUserDataRef matches the start of every ${user_data...} reference.
var torcUserDataRef = lazyre.New(`\$\{user_data\.`)

// torcUDRef matches ${user_data.input.NAME} and ${user_data.output.NAME},
// with, before it, the torc CLI call that reads or writes it (torc
// user-data get|update, torc-client, an optional -f/--format), if any.
var torcUDRef = lazyre.New(`(\btorc(?:-client)?(?:\s+(?:-f|--format)(?:\s+|=)\S+)?\s+user-data\s+(get|update)\s+)?\$\{user_data\.(input|output)\.([^{}\s]*)\}`)

// torcEnv is the environment Torc promises every job and recovery script
// (TORC_API_URL aside: faber has no server), as plan env: faber substitutes
// each step's values. TORC_OUTPUT_DIR, which no variable holds, is set by
// the first line of every script (torcOutputDir); recovery scripts also get
// TORC_RETURN_CODE there.
func torcEnv() []struct{ name, value string } {
	return []struct{ name, value string }{
		{"TORC_WORKFLOW_ID", "{run_id}"},
		{"TORC_JOB_ID", "{step_id}"},
		{"TORC_JOB_NAME", "{step_name}"},
		{"TORC_ATTEMPT_ID", "{attempt}"},
	}
}

// torcOutputDir starts every converted command; torcRecoveryEnv every
// converted recovery script.
const (
	torcOutputDir   = `export TORC_OUTPUT_DIR="$FABER_OUTPUT_DIR"` + "\n"
	torcRecoveryEnv = `export TORC_OUTPUT_DIR="$FABER_OUTPUT_DIR" TORC_RETURN_CODE="$FABER_RETURN_CODE"` + "\n"
)

func (c *conv) torc(root *yaml.Node) *yaml.Node {
	out := newMap(root)
	var (
		name, desc, upf    field
		jobsN              *yaml.Node
		wfParams           = map[string]param{}
		files              = map[string]torcFile{}
		rrs                = map[string]*yaml.Node{}
		scheds             = map[string]*yaml.Node{}
		slurmDefaults      *yaml.Node
		handlerN, handlerK *yaml.Node
		uds                = map[string]*torcUD{}
	)
	for _, f := range c.fields(root, "workflow") {
		switch f.key {
		case "name":
			name = f
		case "description":
			desc = f
		case "use_pending_failed":
			upf = f
		case "jobs":
			jobsN = f.v
		case "user":
			c.warnf(f.k, "user: dropped (faber runs steps as the user who runs faber)")
		case "parameters":
			for _, p := range c.params(f.v, "parameters") {
				wfParams[p.name] = p
			}
		case "files":
			c.torcFiles(f.v, files)
		case "resource_requirements":
			c.named(f.v, "resource_requirements", rrs)
		case "slurm_schedulers":
			c.named(f.v, "slurm_schedulers", scheds)
		case "slurm_defaults":
			slurmDefaults = f.v
		case "failure_handlers":
			handlerK, handlerN = f.k, f.v
		case "user_data":
			uds = c.torcUserData(f.v)
		case "actions":
			if len(f.v.Content) > 0 {
				c.errorf(f.k, "actions: not supported: faber has no workflow actions (use an end: step, or a step with needs)")
			}
		case "resource_monitor":
			c.warnf(f.k, "resource_monitor: dropped (faber does not sample resource use)")
		case "compute_node_expiration_buffer_seconds", "compute_node_wait_for_new_jobs_seconds",
			"compute_node_ignore_workflow_completion", "compute_node_wait_for_healthy_database_minutes":
			c.warnf(f.k, "%s: dropped (faber has no compute-node workers)", f.key)
		case "jobs_sort_method":
			c.warnf(f.k, "jobs_sort_method: dropped (faber starts ready steps in plan order)")
		default:
			c.errorf(f.k, "unknown Torc workflow field %q: no faber equivalent", f.key)
		}
	}
	if name.v != nil {
		if s, ok := c.str(name.v, "name"); ok {
			set(out, name.k, "name", newStr(name.v, s))
		}
	} else {
		c.errorf(root, "missing required field \"name\"")
	}
	if desc.v != nil {
		set(out, desc.k, "description", c.clone(desc.v, 0))
	}
	if upf.v != nil {
		set(out, upf.k, "use_pending_failed", c.clone(upf.v, 0))
	}
	env := newMap(root)
	for _, e := range torcEnv() {
		set(env, nil, e.name, newStr(root, e.value))
	}
	set(out, nil, "env", env)
	if handlerN != nil {
		set(out, handlerK, "failure_handlers", c.torcHandlers(handlerN))
	}
	jobs := c.torcJobs(jobsN, wfParams)
	if jobs == nil {
		return out
	}
	c.torcUserDataUses(jobs, uds)
	if ctx := c.torcContext(uds); ctx != nil {
		set(out, nil, "context", ctx)
	}
	c.torcDeps(jobs, files)
	steps := newSeq(jobsN, false)
	for _, j := range jobs {
		steps.Content = append(steps.Content, c.torcStep(j, files, uds, rrs, scheds, slurmDefaults))
	}
	set(out, nil, "steps", steps)
	return out
}

// named collects a list of mappings with a name field into m.
func (c *conv) named(n *yaml.Node, where string, m map[string]*yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "%s: must be a list, not %s", where, kindName(n))
		return
	}
	for _, it := range n.Content {
		it = deref(it)
		if it.Kind != yaml.MappingNode {
			c.errorf(it, "%s: must be a list of mappings", where)
			continue
		}
		_, nn := get(it, "name")
		if nn == nil || nn.Kind != yaml.ScalarNode {
			c.errorf(it, "%s: an entry has no name", where)
			continue
		}
		if _, dup := m[nn.Value]; dup {
			c.errorf(nn, "%s: duplicate name %q", where, nn.Value)
			continue
		}
		m[nn.Value] = it
	}
}

// torcFile is a file of the files: section.
type torcFile struct {
	path  string
	node  *yaml.Node
	names []string // concrete names when parameterized
}

func (c *conv) torcFiles(n *yaml.Node, files map[string]torcFile) {
	m := map[string]*yaml.Node{}
	c.named(n, "files", m)
	total := 0 // instances of parameterized files, bounded as jobs' are
	for name, fn := range m {
		f := torcFile{node: fn}
		var params []param
		mode := "product"
		for _, kv := range c.fields(fn, "files: "+name) {
			switch kv.key {
			case "name":
			case "path":
				f.path, _ = c.str(kv.v, "files: "+name+": path")
			case "parameters":
				params = append(params, c.params(kv.v, "files: "+name+": parameters")...)
			case "parameter_mode":
				mode = kv.v.Value
			case "use_parameters":
				c.errorf(kv.k, "files: %s: use_parameters: not supported on files (write the parameters on the file)", name)
			default:
				c.errorf(kv.k, "files: %s: unknown Torc file field %q: no faber equivalent", name, kv.key)
			}
		}
		if f.path == "" {
			c.errorf(fn, "files: %s: missing path", name)
		}
		files[name] = f
		if len(params) > 0 {
			if total += comboCount(params, mode); total > maxNames {
				c.errorf(fn, "files: %s: the files' parameters make more than %d names in all; at most %d", name, maxNames, maxNames)
				return
			}
			for _, combo := range c.combos(params, mode, fn) {
				cn, err := expand(name, combo)
				if err != nil {
					c.errorf(fn, "files: %s: %v", name, err)
					break
				}
				cp, err := expand(f.path, combo)
				if err != nil {
					c.errorf(fn, "files: %s: path: %v", name, err)
					break
				}
				files[cn] = torcFile{path: cp, node: fn}
			}
		}
	}
}

// params reads a parameters: mapping (name -> list or range string).
func (c *conv) params(n *yaml.Node, where string) []param {
	var out []param
	for _, f := range c.fields(n, where) {
		p := param{name: f.key, node: f.k}
		switch f.v.Kind {
		case yaml.SequenceNode:
			for _, it := range c.strList(f.v, where+": "+f.key) {
				p.values = append(p.values, it.Value)
			}
		case yaml.ScalarNode:
			vals, err := expandParam(f.v.Value)
			if err != nil {
				c.errorf(f.v, "%s: %s: %v", where, f.key, err)
				continue
			}
			p.values = vals
		default:
			c.errorf(f.v, "%s: %s: must be a list or a string like \"1:10\", not %s", where, f.key, kindName(f.v))
			continue
		}
		if len(p.values) == 0 {
			c.errorf(f.v, "%s: %s: has no values", where, f.key)
			continue
		}
		out = append(out, p)
	}
	return out
}

const maxValues = 100000

// maxNames bounds the instances of all parameterized jobs together, as
// spec.MaxPlanItems bounds a plan's fan-out items (a variable for tests).
var maxNames = 1000000

// expandParam expands a Torc parameter string: "1:5" and "0:10:2"
// (inclusive integer ranges), "0.0:1.0:0.25" (float range), "[a,b,c]"
// (a list), or a single value.
func expandParam(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		var out []string
		for _, v := range strings.Split(s[1:len(s)-1], ",") {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if v != "" {
				out = append(out, v)
			}
		}
		return out, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return []string{s}, nil
	}
	ints := true
	for _, p := range parts {
		if _, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64); err != nil {
			ints = false
		}
	}
	if ints {
		from, _ := strconv.ParseInt(strings.TrimSpace(parts[0]), 10, 64)
		to, _ := strconv.ParseInt(strings.TrimSpace(parts[1]), 10, 64)
		step := int64(1)
		if len(parts) == 3 {
			step, _ = strconv.ParseInt(strings.TrimSpace(parts[2]), 10, 64)
		}
		if step <= 0 || to < from {
			return nil, fmt.Errorf("range %q: want from:to or from:to:step with from <= to and step > 0", s)
		}
		if (to-from)/step >= maxValues {
			return nil, fmt.Errorf("range %q has more than %d values", s, maxValues)
		}
		var out []string
		for v := from; v <= to; v += step {
			out = append(out, strconv.FormatInt(v, 10))
		}
		return out, nil
	}
	var f [3]float64
	dec := 0
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("range %q: %q is not a number", s, p)
		}
		f[i] = v
		if _, frac, ok := strings.Cut(strings.TrimSpace(p), "."); ok {
			dec = max(dec, len(frac))
		}
	}
	if len(parts) == 2 {
		return nil, fmt.Errorf("float range %q needs a step (from:to:step)", s)
	}
	if f[2] <= 0 || f[1] < f[0] || (f[1]-f[0])/f[2] >= maxValues {
		return nil, fmt.Errorf("range %q: want from <= to, step > 0 and at most %d values", s, maxValues)
	}
	var out []string
	n := int(math.Floor((f[1]-f[0])/f[2] + 1e-9))
	for i := 0; i <= n; i++ {
		out = append(out, strconv.FormatFloat(f[0]+float64(i)*f[2], 'f', dec, 64))
	}
	return out, nil
}

// combos returns every combination of the parameters' values: the
// Cartesian product (mode product) or the i-th values together (zip).
func (c *conv) combos(params []param, mode string, at *yaml.Node) []map[string]string {
	if mode == "zip" {
		n := len(params[0].values)
		for _, p := range params {
			if len(p.values) != n {
				c.errorf(at, "parameter_mode zip: parameter %q has %d values, %q has %d", params[0].name, n, p.name, len(p.values))
				return nil
			}
		}
		out := make([]map[string]string, n)
		for i := range out {
			out[i] = map[string]string{}
			for _, p := range params {
				out[i][p.name] = p.values[i]
			}
		}
		return out
	}
	out := []map[string]string{{}}
	for _, p := range params {
		var next []map[string]string
		for _, m := range out {
			for _, v := range p.values {
				n := map[string]string{p.name: v}
				for k, x := range m {
					n[k] = x
				}
				next = append(next, n)
			}
		}
		out = next
		if len(out) > maxValues {
			c.errorf(at, "parameters make more than %d combinations", maxValues)
			return nil
		}
	}
	return out
}

// comboCount is how many combinations combos makes (before checking
// them), at most maxValues+1.
func comboCount(params []param, mode string) int {
	if mode == "zip" {
		return len(params[0].values)
	}
	n := 1
	for _, p := range params {
		n *= len(p.values)
		if n > maxValues {
			return maxValues + 1
		}
	}
	return n
}

// expand substitutes {param} and {param:spec} in a Torc name template.
func expand(tmpl string, combo map[string]string) (string, error) {
	var err error
	out := torcParamRef().ReplaceAllStringFunc(tmpl, func(m string) string {
		sm := torcParamRef().FindStringSubmatch(m)
		v, ok := combo[sm[1]]
		if !ok {
			return m
		}
		s, e := formatValue(v, sm[2])
		if e != nil && err == nil {
			err = e
		}
		return s
	})
	return out, err
}

var intSpec = lazyre.New(`^(0?)(\d*)d$`)
var floatSpec = lazyre.New(`^\.(\d+)f$`)

// formatValue applies a Torc format spec (03d, .4f) to a value.
func formatValue(v, spec string) (string, error) {
	switch {
	case spec == "":
		return v, nil
	case intSpec().MatchString(spec):
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return v, fmt.Errorf("format {:%s} needs an integer, not %q", spec, v)
		}
		m := intSpec().FindStringSubmatch(spec)
		w, _ := strconv.Atoi(m[2])
		if m[1] == "0" {
			return fmt.Sprintf("%0*d", w, i), nil
		}
		return fmt.Sprintf("%*d", w, i), nil
	case floatSpec().MatchString(spec):
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return v, fmt.Errorf("format {:%s} needs a number, not %q", spec, v)
		}
		p, _ := strconv.Atoi(floatSpec().FindStringSubmatch(spec)[1])
		return strconv.FormatFloat(f, 'f', p, 64), nil
	}
	return v, fmt.Errorf("format spec {:%s} is not supported (only d, 0Nd and .Nf)", spec)
}

// torcJobs reads the jobs, gives each an id, and expands parameters.
func (c *conv) torcJobs(n *yaml.Node, wf map[string]param) []*torcJob {
	var jobs []*torcJob
	ids := map[string]*torcJob{}
	names, tooMany := 0, false // instances of parameterized jobs so far
	for _, jn := range n.Content {
		jn = deref(jn)
		j := &torcJob{node: jn, fields: map[string]field{}, needSet: map[int]bool{}, mode: "product"}
		for _, f := range c.fields(jn, "job") {
			j.fields[f.key] = f
		}
		nf, ok := j.fields["name"]
		if !ok {
			c.errorf(jn, "job: missing required field \"name\"")
			continue
		}
		j.nameN = nf.v
		if j.name, ok = c.str(nf.v, "job: name"); !ok {
			continue
		}
		where := fmt.Sprintf("job %q", j.name)
		if f, ok := j.fields["parameters"]; ok {
			j.params = c.params(f.v, where+": parameters")
		}
		if f, ok := j.fields["use_parameters"]; ok {
			for _, u := range c.strList(f.v, where+": use_parameters") {
				p, ok := wf[u.Value]
				if !ok {
					c.errorf(u, "%s: use_parameters: no workflow parameter %q", where, u.Value)
					continue
				}
				j.params = append(j.params, p)
			}
		}
		if f, ok := j.fields["parameter_mode"]; ok {
			j.modeN = f.v
			if f.v.Value != "product" && f.v.Value != "zip" {
				c.errorf(f.v, "%s: parameter_mode: must be product or zip, not %s", where, kindName(f.v))
			} else {
				j.mode = f.v.Value
			}
		}
		base := j.name
		if len(j.params) > 0 {
			if names += comboCount(j.params, j.mode); names <= maxNames {
				j.combos = c.combos(j.params, j.mode, jn)
			}
			if names > maxNames {
				// use_parameters of a big workflow parameter on many
				// jobs: a few lines, millions of instances.
				if !tooMany {
					tooMany = true
					c.errorf(nf.v, "%s: the jobs' parameters make more than %d instances in all; at most %d (each is a step)", where, maxNames, maxNames)
				}
				continue
			}
			for _, combo := range j.combos {
				cn, err := expand(j.name, combo)
				if err != nil {
					c.errorf(nf.v, "%s: name: %v", where, err)
					break
				}
				j.names = append(j.names, cn)
			}
			base = torcParamRef().ReplaceAllString(j.name, "")
		} else {
			j.names = []string{j.name}
		}
		j.id = sanitizeID(base)
		if j.id == "" {
			c.errorf(nf.v, "%s: name has no letter or digit to make a step id from", where)
			continue
		}
		if other, dup := ids[j.id]; dup {
			c.errorf(nf.v, "%s: its step id %q is also the id of job %q (line %d); rename one of them", where, j.id, other.name, other.nameN.Line)
			continue
		}
		ids[j.id] = j
		j.idx = len(jobs)
		jobs = append(jobs, j)
	}
	return jobs
}

// torcDeps computes each job's needs: depends_on, depends_on_regexes, and
// the files it reads that another job writes.
//
// The work is linear in the jobs, their names, files and dependencies
// (map lookups, and a sort of each job's own needs), except
// depends_on_regexes: each pattern is tried against every job's names, so
// that part is jobs × patterns, linear in the jobs for each pattern.
// c.ops counts the steps of the loops (tests check it grows linearly).
func (c *conv) torcDeps(jobs []*torcJob, files map[string]torcFile) {
	byName := map[string]*torcJob{}
	for _, j := range jobs {
		byName[j.name] = j
		for _, n := range j.names {
			byName[n] = j
		}
	}
	producer := map[string]*torcJob{}
	for _, j := range jobs {
		for _, fn := range c.jobFiles(j, "output") {
			producer[fn] = j
		}
	}
	need := func(j, d *torcJob, at *yaml.Node, what string) {
		if d == j {
			c.errorf(at, "job %q: %s: depends on itself (a fan-out's instances cannot depend on each other)", j.name, what)
			return
		}
		c.ops++
		if !j.needSet[d.idx] {
			j.needSet[d.idx] = true
			j.needIdx = append(j.needIdx, d.idx)
		}
	}
	for _, j := range jobs {
		where := fmt.Sprintf("job %q", j.name)
		if f, ok := j.fields["depends_on"]; ok {
			for _, d := range c.strList(f.v, where+": depends_on") {
				targets := []string{d.Value}
				if len(j.combos) > 0 && torcParamRef().MatchString(d.Value) {
					targets = nil
					for _, combo := range j.combos {
						t, _ := expand(d.Value, combo)
						targets = append(targets, t)
					}
				}
				for _, t := range targets {
					dj, ok := byName[t]
					if !ok {
						c.errorf(d, "%s: depends_on: no job named %q", where, t)
						break
					}
					need(j, dj, d, "depends_on")
				}
			}
		}
		if f, ok := j.fields["depends_on_regexes"]; ok {
			for _, d := range c.strList(f.v, where+": depends_on_regexes") {
				re, err := regexp.Compile(d.Value)
				if err != nil {
					c.errorf(d, "%s: depends_on_regexes: bad regexp %q: %v", where, d.Value, err)
					continue
				}
				found := false
				for _, o := range jobs {
					for _, n := range o.names {
						c.ops++
						if re.MatchString(n) && o != j {
							need(j, o, d, "depends_on_regexes")
							found = true
							break
						}
					}
				}
				if !found {
					c.errorf(d, "%s: depends_on_regexes: %q matches no other job", where, d.Value)
				}
			}
		}
		for _, fn := range c.jobFiles(j, "input") {
			if p, ok := producer[fn]; ok && p != j {
				need(j, p, j.nameN, "input file")
			}
		}
		sort.Ints(j.needIdx) // in job order: deterministic
		for _, i := range j.needIdx {
			c.ops++
			j.needs = append(j.needs, jobs[i].id)
		}
	}
}

// jobFiles returns the concrete names of the files a job reads (dir
// input) or writes (output): from input_files/output_files and from
// ${files.input.X} / ${files.output.X} in its command.
func (c *conv) jobFiles(j *torcJob, dir string) []string {
	var tmpls []string
	if f, ok := j.fields[dir+"_files"]; ok {
		for _, n := range c.strListQuiet(f.v) {
			tmpls = append(tmpls, n.Value)
		}
	}
	if f, ok := j.fields["command"]; ok && f.v.Kind == yaml.ScalarNode {
		for _, m := range torcFileRef().FindAllStringSubmatch(f.v.Value, -1) {
			if m[1] == dir {
				tmpls = append(tmpls, m[2])
			}
		}
	}
	var out []string
	for _, t := range tmpls {
		if len(j.combos) == 0 {
			out = append(out, t)
			continue
		}
		for _, combo := range j.combos {
			e, _ := expand(t, combo)
			out = append(out, e)
		}
	}
	return out
}

func (c *conv) strListQuiet(n *yaml.Node) []*yaml.Node {
	if n.Kind == yaml.ScalarNode {
		return []*yaml.Node{n}
	}
	var out []*yaml.Node
	for _, it := range n.Content {
		if it = deref(it); it.Kind == yaml.ScalarNode {
			out = append(out, it)
		}
	}
	return out
}

// torcStep builds the faber step of a job.
func (c *conv) torcStep(j *torcJob, files map[string]torcFile, uds map[string]*torcUD, rrs, scheds map[string]*yaml.Node, slurmDefaults *yaml.Node) *yaml.Node {
	where := fmt.Sprintf("job %q", j.name)
	s := newMap(j.node)
	nameF := j.fields["name"]
	set(s, nameF.k, "id", newStr(j.nameN, j.id))
	set(s, nameF.k, "name", newStr(j.nameN, j.name))
	paramSet := map[string]bool{}
	for _, p := range j.params {
		paramSet[p.name] = true
	}
	cmdF, ok := j.fields["command"]
	if !ok {
		c.errorf(j.node, "%s: missing required field \"command\"", where)
	} else if cmd, ok := c.str(cmdF.v, where+": command"); ok {
		set(s, cmdF.k, "run", newStr(cmdF.v, c.torcCommand(cmd, cmdF.v, where, paramSet, files, j, uds)))
	}
	needs := newSeq(j.node, true)
	for _, n := range j.needs {
		needs.Content = append(needs.Content, newStr(j.node, n))
	}
	set(s, nil, "needs", needs)
	if len(j.params) > 0 {
		c.fanOut(s, j)
	}
	if len(j.params) > 0 {
		// {step_name} of an item is the name with its placeholders; Torc
		// names the instance.
		e := newMap(j.nameN)
		set(e, nil, "TORC_JOB_NAME", newStr(j.nameN, c.subst(j.name, paramSet)))
		set(s, nil, "env", e)
	}
	// Resource requirements and scheduler.
	var rr, sched *yaml.Node
	if f, ok := j.fields["resource_requirements"]; ok {
		if rr = rrs[f.v.Value]; rr == nil {
			c.errorf(f.v, "%s: resource_requirements: no resource_requirements named %q", where, f.v.Value)
		}
	}
	if f, ok := j.fields["scheduler"]; ok {
		if sched = scheds[f.v.Value]; sched == nil {
			c.errorf(f.v, "%s: scheduler: no slurm_schedulers entry named %q (faber runs steps locally unless a Slurm scheduler is named)", where, f.v.Value)
		}
	}
	slurm := newMap(j.node)
	var extra []string
	if rr != nil {
		for _, f := range c.fields(rr, "resource_requirements: "+nameOf(rr)) {
			switch f.key {
			case "name":
			case "runtime":
				d, err := isoDuration(f.v.Value)
				if err != nil {
					c.errorf(f.v, "resource_requirements: runtime: %v", err)
					continue
				}
				set(s, f.k, "timeout", newStr(f.v, d.String()))
			case "num_cpus":
				switch {
				case sched != nil:
					set(slurm, f.k, "cpus", newScalar(f.v, f.v.Value))
				case f.v.Value != "0":
					// A local job's request (and limit), as Torc's runner
					// claims jobs that fit the free CPUs.
					set(s, f.k, "cpus", newScalar(f.v, f.v.Value))
				}
			case "memory":
				if sched != nil {
					set(slurm, f.k, "mem", newStr(f.v, strings.ToUpper(f.v.Value)))
				} else {
					set(s, f.k, "memory", newStr(f.v, f.v.Value))
				}
			case "num_gpus":
				if f.v.Value == "0" {
					continue
				}
				if sched != nil {
					set(slurm, f.k, "gpus", newStr(f.v, f.v.Value))
				} else {
					set(s, f.k, "gpus", newScalar(f.v, f.v.Value))
				}
			case "num_nodes":
				if f.v.Value == "1" {
					continue
				}
				if sched != nil {
					extra = append(extra, "--nodes="+f.v.Value)
				} else {
					c.errorf(f.k, "resource_requirements: num_nodes: %s nodes need a Slurm scheduler; job %q runs locally", f.v.Value, j.name)
				}
			default:
				c.errorf(f.k, "resource_requirements: unknown Torc field %q: no faber equivalent", f.key)
			}
		}
	}
	if sched != nil {
		set(s, j.fields["scheduler"].k, "executor", newStr(j.fields["scheduler"].v, "slurm"))
		extra = append(extra, c.torcSlurm(sched, slurmDefaults, slurm)...)
		if len(extra) > 0 {
			l := newSeq(sched, true)
			for _, e := range extra {
				l.Content = append(l.Content, newStr(sched, e))
			}
			set(slurm, nil, "extra_args", l)
		}
		if len(slurm.Content) > 0 {
			set(s, nil, "slurm", slurm)
		}
	}
	for _, key := range orderedKeys(j) {
		f := j.fields[key]
		switch key {
		case "name", "command", "depends_on", "depends_on_regexes", "parameters", "parameter_mode", "use_parameters",
			"resource_requirements", "scheduler", "input_files", "output_files":
		case "failure_handler":
			set(s, f.k, "failure_handler", c.clone(f.v, 0))
		case "cancel_on_blocking_job_failure":
			if f.v.Value != "true" {
				c.warnf(f.k, "%s: cancel_on_blocking_job_failure: %s dropped (faber always cancels the steps that need a failed step)", where, f.v.Value)
			}
		case "supports_termination":
			c.warnf(f.k, "%s: supports_termination: dropped (faber stops every step with SIGTERM, then SIGKILL after kill_grace)", where)
		case "input_user_data", "output_user_data", "input_user_data_regexes", "output_user_data_regexes":
			// torcUserDataUses
		case "input_file_regexes", "output_file_regexes":
			c.errorf(f.k, "%s: %s: not supported (name the files, or use depends_on)", where, key)
		case "invocation_script":
			c.errorf(f.k, "%s: invocation_script: not supported (put its lines before the command)", where)
		default:
			c.errorf(f.k, "%s: unknown Torc job field %q: no faber equivalent", where, key)
		}
	}
	return s
}

func nameOf(n *yaml.Node) string {
	_, v := get(n, "name")
	if v == nil {
		return "?"
	}
	return v.Value
}

// orderedKeys returns a job's keys in file order.
func orderedKeys(j *torcJob) []string {
	var out []string
	for i := 0; i+1 < len(j.node.Content); i += 2 {
		if _, ok := j.fields[j.node.Content[i].Value]; ok {
			out = append(out, j.node.Content[i].Value)
		}
	}
	return out
}

// torcSlurm fills the slurm block from a Slurm scheduler and the
// workflow's slurm_defaults; it returns the extra srun arguments.
func (c *conv) torcSlurm(sched, defaults, slurm *yaml.Node) []string {
	var extra []string
	has := map[string]bool{}
	for i := 0; i < len(slurm.Content); i += 2 {
		has[slurm.Content[i].Value] = true
	}
	put := func(k *yaml.Node, key string, v *yaml.Node) {
		if !has[key] {
			has[key] = true
			set(slurm, k, key, newStr(v, v.Value))
		}
	}
	for _, f := range c.fields(sched, "slurm_schedulers") {
		switch f.key {
		case "name":
		case "account", "partition", "qos", "mem":
			put(f.k, f.key, f.v)
		case "walltime":
			put(f.k, "time", f.v)
		case "nodes":
			if f.v.Value != "1" {
				extra = append(extra, "--nodes="+f.v.Value)
			}
		case "gres", "tmp":
			extra = append(extra, "--"+f.key+"="+f.v.Value)
		case "ntasks_per_node":
			extra = append(extra, "--ntasks-per-node="+f.v.Value)
		case "extra":
			extra = append(extra, strings.Fields(f.v.Value)...)
		default:
			c.errorf(f.k, "slurm_schedulers: unknown Torc field %q: no faber equivalent", f.key)
		}
	}
	if defaults != nil {
		for _, f := range c.fields(defaults, "slurm_defaults") {
			switch f.key {
			case "account", "qos":
				put(f.k, f.key, f.v)
			default:
				if f.v.Kind != yaml.ScalarNode {
					c.errorf(f.v, "slurm_defaults: %s: must be a string", f.key)
					continue
				}
				extra = append(extra, "--"+f.key+"="+f.v.Value)
			}
		}
	}
	return extra
}

// fanOut writes a parameterized job's fan-out: matrix: (product) or
// foreach: a list of maps (zip).
func (c *conv) fanOut(s *yaml.Node, j *torcJob) {
	at := j.fields["parameters"].k
	if at == nil {
		at = j.fields["use_parameters"].k
	}
	if j.mode == "zip" {
		l := newSeq(at, false)
		for _, combo := range j.combos {
			m := newMap(at)
			m.Style = yaml.FlowStyle
			for _, p := range j.params {
				set(m, at, p.name, newScalar(at, combo[p.name]))
			}
			l.Content = append(l.Content, m)
		}
		set(s, at, "foreach", l)
		return
	}
	m := newMap(at)
	for _, p := range j.params {
		l := newSeq(p.node, true)
		for _, v := range p.values {
			l.Content = append(l.Content, newScalar(p.node, v))
		}
		set(m, p.node, p.name, l)
	}
	set(s, at, "matrix", m)
}

// torcCommand turns a Torc command into a faber run script: file
// references become paths, {param} becomes {item.param}, and every other
// brace is doubled so that faber's substitution leaves it alone.
func (c *conv) torcCommand(cmd string, at *yaml.Node, where string, params map[string]bool, files map[string]torcFile, j *torcJob, uds map[string]*torcUD) string {
	if strings.Contains(cmd, "TORC_API_URL") {
		c.errorf(at, "%s: command: TORC_API_URL is not supported: faber has no server to call", where)
	}
	var bad string
	cmd = torcFileRef().ReplaceAllStringFunc(cmd, func(m string) string {
		name := torcFileRef().FindStringSubmatch(m)[2]
		f, ok := files[name]
		if !ok {
			if bad == "" {
				bad = name
			}
			return m
		}
		return f.path
	})
	if bad != "" {
		c.errorf(at, "%s: command: ${files...%s}: no file named %q in files:", where, bad, bad)
	}
	for _, m := range torcParamRef().FindAllStringSubmatch(cmd, -1) {
		if params[m[1]] && m[2] != "" {
			c.errorf(at, "%s: command: {%s:%s}: format specs are not supported in commands (only in names)", where, m[1], m[2])
		}
	}
	body, update := c.torcUDSubst(cmd, at, where, params, j, uds)
	if update {
		return torcOutputDir + escapeBraces(torcUpdateFunc) + body
	}
	return torcOutputDir + body
}

// subst doubles every brace of s except the {param} placeholders, which
// become {item.param}.
func (c *conv) subst(s string, params map[string]bool) string {
	var b strings.Builder
	last := 0
	for _, loc := range torcParamRef().FindAllStringSubmatchIndex(s, -1) {
		name := s[loc[2]:loc[3]]
		if !params[name] {
			continue
		}
		b.WriteString(escapeBraces(s[last:loc[0]]))
		b.WriteString("{item." + name + "}")
		last = loc[1]
	}
	b.WriteString(escapeBraces(s[last:]))
	return b.String()
}

var braces = strings.NewReplacer("{", "{{", "}", "}}")

func escapeBraces(s string) string {
	return braces.Replace(s)
}

var isoRe = lazyre.New(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// isoDuration parses an ISO 8601 duration such as PT30M, PT2H or P1DT6H.
func isoDuration(s string) (time.Duration, error) {
	m := isoRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, fmt.Errorf("%q is not an ISO 8601 duration like PT30M or P1DT2H", s)
	}
	var d time.Duration
	units := []time.Duration{24 * time.Hour, time.Hour, time.Minute}
	for i, u := range units {
		if m[i+1] != "" {
			n, _ := strconv.ParseInt(m[i+1], 10, 64)
			if n > 1e6 {
				return 0, fmt.Errorf("%q is too long", s)
			}
			d += time.Duration(n) * u
		}
	}
	if m[4] != "" {
		sec, _ := strconv.ParseFloat(m[4], 64)
		if sec > 1e9 {
			return 0, fmt.Errorf("%q is too long", s)
		}
		d += time.Duration(sec * float64(time.Second))
	}
	if d == 0 {
		return 0, fmt.Errorf("%q is zero", s)
	}
	return d, nil
}

// torcHandlers copies failure_handlers, checking their fields (the same as
// faber's) and making TORC_RETURN_CODE and TORC_OUTPUT_DIR available to
// recovery scripts (the other TORC_* come from the plan's env).
func (c *conv) torcHandlers(n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "failure_handlers: must be a list, not %s", kindName(n))
		return newSeq(n, false)
	}
	out := newSeq(n, false)
	for _, h := range n.Content {
		h = deref(h)
		hm := newMap(h)
		for _, f := range c.fields(h, "failure_handlers") {
			switch f.key {
			case "name":
				set(hm, f.k, "name", c.clone(f.v, 0))
			case "rules":
				rules := newSeq(f.v, false)
				if f.v.Kind != yaml.SequenceNode {
					c.errorf(f.v, "failure_handlers: rules: must be a list")
					continue
				}
				for _, r := range f.v.Content {
					r = deref(r)
					rm := newMap(r)
					for _, rf := range c.fields(r, "failure_handlers: rules") {
						switch rf.key {
						case "exit_codes", "match_all_exit_codes", "max_retries":
							set(rm, rf.k, rf.key, c.clone(rf.v, 0))
						case "recovery_script":
							script := torcRecoveryEnv + escapeBraces(rf.v.Value)
							set(rm, rf.k, "recovery_script", newStr(rf.v, script))
						default:
							c.errorf(rf.k, "failure_handlers: rules: unknown Torc field %q: no faber equivalent", rf.key)
						}
					}
					rules.Content = append(rules.Content, rm)
				}
				set(hm, f.k, "rules", rules)
			default:
				c.errorf(f.k, "failure_handlers: unknown Torc field %q: no faber equivalent", f.key)
			}
		}
		out.Content = append(out.Content, hm)
	}
	return out
}

// ---- user data ----

// torcUD is an entry of the workflow's user_data: section.
type torcUD struct {
	name     string
	nameN    *yaml.Node
	data     *yaml.Node // its data: (nil when absent or null)
	json     string     // data as compact JSON text, as Torc puts it in commands
	producer *torcJob   // the job that writes it
	read     bool       // a job reads it (and no job writes it: a context value)
}

// torcUDUse is one user data entry a job reads or writes, and where.
type torcUDUse struct {
	ud *torcUD
	at *yaml.Node
}

// outputKey is what a faber output name must look like; contextKey a
// context variable's name.
var (
	outputKey  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	contextKey = lazyre.New(`^[a-z_][a-z0-9_]*$`)
)

// torcUserData reads the user_data: section (name, data, is_ephemeral).
func (c *conv) torcUserData(n *yaml.Node) map[string]*torcUD {
	m := map[string]*yaml.Node{}
	c.named(n, "user_data", m)
	uds := map[string]*torcUD{}
	for name, un := range m {
		ud := &torcUD{name: name}
		_, ud.nameN = get(un, "name")
		for _, f := range c.fields(un, "user_data: "+name) {
			switch f.key {
			case "name":
			case "data":
				ud.data = f.v
				js, err := nodeJSON(f.v)
				if err != nil {
					c.errorf(f.v, "user_data: %s: data: %s", name, strings.ReplaceAll(err.Error(), "\n", "; "))
				}
				ud.json = js
			case "is_ephemeral":
				if f.v.Value == "true" {
					c.warnf(f.k, "user_data: %s: is_ephemeral: dropped (the values a faber step publishes belong to its run; a new run starts without them)", name)
				}
			default:
				c.errorf(f.k, "user_data: %s: unknown Torc user data field %q: no faber equivalent", name, f.key)
			}
		}
		uds[name] = ud
	}
	return uds
}

// nodeJSON returns a YAML (or JSON) value as compact JSON text, keys
// sorted, as Torc (serde_json) writes it.
func nodeJSON(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("not a JSON value (%v)", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// torcHasUserData reports whether a job names user data at all.
func torcHasUserData(j *torcJob) bool {
	for _, key := range []string{"input_user_data", "output_user_data", "input_user_data_regexes", "output_user_data_regexes"} {
		if _, ok := j.fields[key]; ok {
			return true
		}
	}
	f, ok := j.fields["command"]
	return ok && strings.Contains(f.v.Value, "${user_data.")
}

// torcUserDataUses finds the user data each job reads and writes
// (input_user_data, output_user_data, their _regexes, and
// ${user_data.input.X} / ${user_data.output.X} in its command), gives
// each entry its one producer, and makes every reader need it.
func (c *conv) torcUserDataUses(jobs []*torcJob, uds map[string]*torcUD) {
	var names []string
	for n := range uds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, j := range jobs {
		if !torcHasUserData(j) {
			continue
		}
		where := fmt.Sprintf("job %q", j.name)
		seen := map[string]bool{}
		add := func(dir, name string, at *yaml.Node, how string) {
			ud, ok := uds[name]
			if !ok {
				c.errorf(at, "%s: %s: no user_data entry named %q", where, how, name)
				return
			}
			if seen[dir+" "+name] {
				return
			}
			seen[dir+" "+name] = true
			if dir == "input" {
				j.udIn = append(j.udIn, torcUDUse{ud, at})
			} else {
				j.udOut = append(j.udOut, torcUDUse{ud, at})
			}
		}
		for _, dir := range []string{"input", "output"} {
			key := dir + "_user_data"
			if f, ok := j.fields[key]; ok {
				for _, n := range c.strList(f.v, where+": "+key) {
					add(dir, n.Value, n, key)
				}
			}
			if f, ok := j.fields[key+"_regexes"]; ok {
				for _, n := range c.strList(f.v, where+": "+key+"_regexes") {
					re, err := regexp.Compile(n.Value)
					if err != nil {
						c.errorf(n, "%s: %s_regexes: bad regexp %q: %v", where, key, n.Value, err)
						continue
					}
					found := false
					for _, name := range names {
						if re.MatchString(name) {
							add(dir, name, n, key+"_regexes")
							found = true
						}
					}
					if !found {
						c.errorf(n, "%s: %s_regexes: %q matches no user_data entry (a pattern is matched against the names of user_data:, when the plan is converted)", where, key, n.Value)
					}
				}
			}
		}
		if f, ok := j.fields["command"]; ok && f.v.Kind == yaml.ScalarNode && strings.Contains(f.v.Value, "${user_data.") {
			for _, m := range torcUDRef().FindAllStringSubmatch(f.v.Value, -1) {
				add(m[3], m[4], f.v, "command: ${user_data."+m[3]+"."+m[4]+"}")
			}
		}
	}
	for _, j := range jobs {
		where := fmt.Sprintf("job %q", j.name)
		for _, u := range j.udOut {
			ud := u.ud
			switch {
			case len(j.params) > 0:
				c.errorf(u.at, "%s: writes user data %q: a job with parameters becomes a fan-out step, whose items publish no values another step can use (write it from a job without parameters)", where, ud.name)
			case ud.producer != nil && ud.producer != j:
				c.errorf(u.at, "%s: writes user data %q, which job %q (line %d) writes too: a faber value has one step that publishes it", where, ud.name, ud.producer.name, ud.producer.nameN.Line)
			case !outputKey().MatchString(ud.name):
				c.errorf(u.at, "%s: writes user data %q: the name of a value a step publishes must match [A-Za-z_][A-Za-z0-9_]* (rename the user data)", where, ud.name)
			case strings.Contains(j.id, "."):
				c.errorf(u.at, "%s: writes user data %q: its step id %q has a '.', which {steps.ID.outputs.KEY} cannot name (rename the job)", where, ud.name, j.id)
			default:
				ud.producer = j
			}
		}
	}
	for _, j := range jobs {
		where := fmt.Sprintf("job %q", j.name)
		for _, u := range j.udIn {
			ud := u.ud
			switch p := ud.producer; {
			case p == j:
				c.errorf(u.at, "%s: reads user data %q, which it writes: a step cannot use a value it publishes itself", where, ud.name)
			case p != nil:
				c.ops++
				if !j.needSet[p.idx] {
					j.needSet[p.idx] = true
					j.needIdx = append(j.needIdx, p.idx)
				}
			case ud.data != nil:
				ud.read = true
			default:
				c.errorf(u.at, "%s: reads user data %q, which no job writes (output_user_data, or ${user_data.output.%s} in a command) and which has no data:", where, ud.name, ud.name)
			}
		}
	}
	for _, name := range names {
		ud := uds[name]
		switch {
		case ud.producer != nil && ud.data != nil:
			c.warnf(ud.data, "user_data: %s: data: dropped: job %q writes it, and the jobs that read it get that value", name, ud.producer.name)
		case ud.producer == nil && !ud.read && ud.data != nil:
			c.warnf(ud.data, "user_data: %s: data: dropped: no job reads it", name)
		}
	}
}

// torcContext returns the context: of the user data that jobs read and
// none writes: each becomes a context variable holding its data as JSON
// text (so --set can replace it), nil when there is none.
func (c *conv) torcContext(uds map[string]*torcUD) *yaml.Node {
	var list []*torcUD
	for _, ud := range uds {
		if ud.read {
			list = append(list, ud)
		}
	}
	if len(list) == 0 {
		return nil
	}
	sort.Slice(list, func(a, b int) bool {
		return list[a].nameN.Line < list[b].nameN.Line || (list[a].nameN.Line == list[b].nameN.Line && list[a].nameN.Column < list[b].nameN.Column)
	})
	ctx := newMap(list[0].nameN)
	for _, ud := range list {
		if !contextKey().MatchString(ud.name) {
			c.errorf(ud.nameN, "user_data: %s: its data becomes the context variable %s, and a context variable's name must match [a-z_][a-z0-9_]* (rename the user data)", ud.name, ud.name)
			continue
		}
		set(ctx, ud.nameN, ud.name, newStr(ud.data, ud.json))
	}
	return ctx
}

// torcUpdateFunc starts a command that calls torc user-data update: the
// call becomes one of this function, which publishes the value given with
// --data (or -d) under the user data's name, as a here-document whose
// delimiter is not in the value.
const torcUpdateFunc = `faber_torc_user_data_update() { # NAME [--data VALUE]: publishes NAME in $FABER_OUTPUTS
  _faber_n=$1 _faber_v= _faber_set=
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      -d|--data) _faber_v=${2-} _faber_set=1; if [ $# -gt 1 ]; then shift; fi ;;
      --data=*) _faber_v=${1#--data=} _faber_set=1 ;;
    esac
    shift
  done
  if [ -z "$_faber_set" ]; then return 0; fi
  _faber_d=FABER_EOF
  while case $_faber_v in *"$_faber_d"*) true ;; *) false ;; esac; do _faber_d=${_faber_d}_; done
  printf '%s<<%s\n%s\n%s\n' "$_faber_n" "$_faber_d" "$_faber_v" "$_faber_d" >> "$FABER_OUTPUTS"
}
`

// torcUDSubst converts the user data references of a command (files
// already replaced) and escapes the rest as subst does:
//   - torc user-data get ${user_data.input.X} prints the record Torc's CLI
//     prints as JSON, {"name": "X", "data": VALUE};
//   - ${user_data.input.X} is the value: {steps.P.outputs.X} when job P
//     writes X, else the context variable {X} (its data as JSON);
//   - torc user-data update ${user_data.output.X} --data V publishes V as
//     X (torcUpdateFunc; update reports whether it is needed);
//   - ${user_data.output.X} anywhere else is the name X, and a warning
//     says that the command must publish it.
func (c *conv) torcUDSubst(cmd string, at *yaml.Node, where string, params map[string]bool, j *torcJob, uds map[string]*torcUD) (string, bool) {
	if len(j.udIn) == 0 && len(j.udOut) == 0 && !strings.Contains(cmd, "${user_data.") {
		return c.subst(cmd, params), false
	}
	locs := torcUDRef().FindAllStringSubmatchIndex(cmd, -1)
	covered := map[int]bool{} // starts of the ${user_data. of each match
	for _, l := range locs {
		covered[strings.LastIndex(cmd[:l[1]], "${user_data.")] = true
	}
	for _, l := range torcUserDataRef().FindAllStringIndex(cmd, -1) {
		if !covered[l[0]] {
			end, depth := l[0]+1, 0 // to the brace that closes it (60 bytes at most)
			for ; end < len(cmd) && end < l[0]+60; end++ {
				if cmd[end] == '{' {
					depth++
				} else if cmd[end] == '}' {
					if depth--; depth == 0 {
						end++
						break
					}
				}
			}
			c.errorf(at, "%s: command: %q: not a user data reference faber converts (write ${user_data.input.NAME} or ${user_data.output.NAME}, NAME an entry of user_data: without {placeholders})", where, cmd[l[0]:end])
		}
	}
	var b strings.Builder
	update := false
	published := map[string]bool{}
	inCmd := map[string]bool{}
	last := 0
	for _, l := range locs {
		b.WriteString(c.subst(cmd[last:l[0]], params))
		last = l[1]
		call, dir, name := "", cmd[l[6]:l[7]], cmd[l[8]:l[9]]
		if l[4] >= 0 {
			call = cmd[l[4]:l[5]]
		}
		ud := uds[name]
		if ud == nil { // reported by torcUserDataUses
			b.WriteString(escapeBraces(cmd[l[0]:l[1]]))
			continue
		}
		ref := ""
		switch {
		case dir == "output":
		case ud.producer != nil && ud.producer != j:
			ref = "{steps." + ud.producer.id + ".outputs." + name + "}"
		case ud.read:
			ref = "{" + name + "}"
		default: // reported by torcUserDataUses
			b.WriteString(escapeBraces(cmd[l[0]:l[1]]))
			continue
		}
		switch {
		case dir == "input" && call == "get":
			b.WriteString(`printf '{{"name": "` + name + `", "data": %s}}\n' ` + ref)
		case dir == "input":
			if l[2] >= 0 {
				b.WriteString(escapeBraces(cmd[l[2]:l[3]]))
			}
			b.WriteString(ref)
			inCmd[name] = true
		case call == "update":
			b.WriteString("faber_torc_user_data_update " + name)
			update = true
			published[name] = true
		default:
			if l[2] >= 0 {
				b.WriteString(escapeBraces(cmd[l[2]:l[3]]))
			}
			b.WriteString(name)
			published[name] = true
			c.warnf(at, "%s: command: ${user_data.output.%s} becomes the name %s: faber has no user data store for the program to write it to; the command must publish the value by appending %s=VALUE (or %s<<EOF, its lines, EOF) to the file \"$FABER_OUTPUTS\" names, or call torc user-data update ${user_data.output.%s} --data VALUE, which the import converts", where, name, name, name, name, name)
		}
		if dir == "input" && call == "get" {
			inCmd[name] = true
		}
	}
	b.WriteString(c.subst(cmd[last:], params))
	visible := strings.Contains(cmd, "FABER_OUTPUTS")
	for _, u := range j.udOut {
		n := u.ud.name
		if published[n] || (visible && (strings.Contains(cmd, n+"=") || strings.Contains(cmd, n+"<<"))) {
			continue
		}
		c.warnf(u.at, "%s: writes user data %q, but its command does not publish it: faber has no user data store (nor Torc's API); the command must append %s=VALUE (or %s<<EOF, its lines, EOF) to the file \"$FABER_OUTPUTS\" names, or call torc user-data update ${user_data.output.%s} --data VALUE, which the import converts; a step that reads it fails if it is not published", where, n, n, n, n)
	}
	for _, u := range j.udIn {
		if n := u.ud.name; !inCmd[n] && (u.ud.producer != nil || u.ud.read) && u.ud.producer != j {
			c.warnf(u.at, "%s: reads user data %q, but its command does not name ${user_data.input.%s}: the step waits for the value, but faber has no user data store (nor Torc's API) to read it from; name it in the command, where it becomes the value", where, n, n)
		}
	}
	return b.String(), update
}
