package importer

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// FABER's autonomy (workflow.schema.json: autonomy {level, description,
// pause_before_release, require_approval_for, overrides}; a plan's
// autonomy may also be just the level) and a phase's require_approval
// become approval gates (README "Approval gates"): a gate on a phase or a
// step where FABER would ask a person before going on.

// faberLevels are FABER's autonomy levels.
func faberLevels() []string { return []string{"dry-run", "assist", "guarded", "autonomous"} }

// faberAutonomy reads an autonomy field (where names it in messages):
// pause_before_release and require_approval_for are recorded in fp; the
// level's node is returned (nil when none) for faberGates to resolve.
func (c *conv) faberAutonomy(f field, where string, fp *faberPlan) *yaml.Node {
	if f.v.Kind == yaml.ScalarNode {
		c.faberLevel(f.v, where)
		return f.v
	}
	var level *yaml.Node
	for _, a := range c.fields(f.v, where) {
		switch a.key {
		case "level":
			if c.faberLevel(a.v, where+": level") {
				level = a.v
			}
		case "pause_before_release":
			if a.v.Kind != yaml.ScalarNode || a.v.ShortTag() != "!!bool" {
				c.errorf(a.v, "%s: pause_before_release: must be true or false, not %s", where, kindName(a.v))
			} else if a.v.Value == "true" {
				fp.phaseGates["release"] = append(fp.phaseGates["release"], faberGate{why: "pause_before_release", at: a.k})
			}
		case "require_approval_for":
			fp.approvalFor = append(fp.approvalFor, c.strList(a.v, where+": require_approval_for")...)
		case "overrides":
			if a.v.Kind != yaml.MappingNode || len(a.v.Content) > 0 {
				c.warnf(a.k, "%s: overrides: dropped (FABER documents no syntax for them; write approval: on the converted plan's phases or steps)", where)
			}
		case "description":
			// the level's description, for people
		default:
			c.errorf(a.k, "%s: unknown FABER field %q (autonomy has level, description, pause_before_release, require_approval_for, overrides)", where, a.key)
		}
	}
	return level
}

// faberLevel checks an autonomy level.
func (c *conv) faberLevel(n *yaml.Node, where string) bool {
	if n.Kind != yaml.ScalarNode {
		c.errorf(n, "%s: must be a level (%s), not %s", where, strings.Join(faberLevels(), ", "), kindName(n))
		return false
	}
	for _, l := range faberLevels() {
		if n.Value == l {
			return true
		}
	}
	c.errorf(n, "%s: unknown autonomy level %q (FABER's levels are %s)", where, n.Value, strings.Join(faberLevels(), ", "))
	return false
}

// faberGates resolves the autonomy level (the plan's, else the
// workflow's) and require_approval_for into gates, once the workflow's
// phases are known.
func (c *conv) faberGates(fp *faberPlan, phaseMap map[string]field) {
	level := fp.planLevel
	if level == nil {
		level = fp.wfLevel
	}
	if level != nil {
		switch level.Value {
		case "guarded":
			fp.phaseGates["release"] = append(fp.phaseGates["release"], faberGate{why: "autonomy level guarded", at: level})
		case "assist":
			fp.phaseGates["release"] = append(fp.phaseGates["release"], faberGate{why: "autonomy level assist", at: level})
			c.warnf(level, "autonomy: level assist: FABER stops before the release phase; faber asks for approval before it instead (reject it to stop there)")
		case "dry-run":
			c.errorf(level, "autonomy: level dry-run: not supported: FABER only simulates, faber would run the steps; import with another level, or see what would run with faber run --dry-run")
		}
	}
	if len(fp.approvalFor) == 0 {
		return
	}
	// The steps of every phase (converted or not), as phase:id.
	steps := map[string][]string{} // FABER step id -> its phase:id
	var ids []string
	for _, ph := range faberPhases() {
		pf, ok := phaseMap[ph]
		if !ok || pf.v.Kind != yaml.MappingNode {
			continue
		}
		for _, key := range []string{"pre_steps", "steps", "post_steps"} {
			_, l := get(pf.v, key)
			if l == nil || deref(l).Kind != yaml.SequenceNode {
				continue
			}
			for _, sn := range deref(l).Content {
				sn = deref(sn)
				if sn.Kind != yaml.MappingNode {
					continue
				}
				if _, id := get(sn, "id"); id != nil && deref(id).Kind == yaml.ScalarNode {
					v := deref(id).Value
					if len(steps[v]) == 0 {
						ids = append(ids, v)
					}
					steps[v] = append(steps[v], ph+":"+v)
				}
			}
		}
	}
	phases := map[string]bool{}
	for _, p := range faberPhases() {
		phases[p] = true
	}
	for _, n := range fp.approvalFor {
		g := faberGate{why: "require_approval_for", at: n}
		v := n.Value
		switch {
		case phases[v]:
			fp.phaseGates[v] = append(fp.phaseGates[v], g)
		case len(steps[v]) > 0:
			for _, k := range steps[v] {
				fp.stepGates[k] = append(fp.stepGates[k], g)
			}
		case strings.Contains(v, ":") && slices.Contains(steps[v[strings.Index(v, ":")+1:]], v):
			fp.stepGates[v] = append(fp.stepGates[v], g)
		default:
			known := "the workflow has no steps"
			if len(ids) > 0 {
				known = "its steps are " + strings.Join(ids, ", ")
			}
			c.errorf(n, "autonomy: require_approval_for: %q names no phase or step of this workflow (it takes a phase: %s; a step id, or phase:step-id; %s)", v, strings.Join(faberPhases(), ", "), known)
		}
	}
}

// gatePrompt is the prompt of a gate on what (phase build, step
// build:implement): the FABER settings that ask for it, and the question.
func gatePrompt(what, question string, g []faberGate) string {
	var why []string
	seen := map[string]bool{}
	for _, x := range g {
		if !seen[x.why] {
			seen[x.why] = true
			why = append(why, x.why)
		}
	}
	return "FABER " + what + " needs approval (" + strings.Join(why, ", ") + "). " + question
}
