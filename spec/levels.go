package spec

// Levels groups the steps in the order a run can start them: the first
// level holds the steps without dependencies, and every other step sits one
// level after the latest of its dependencies. The steps of one level could
// run at the same time (within the jobs limit); within a level they are in
// plan order, the order in which the runner starts ready steps. The end step
// is in no level: it runs after every step. Dependencies on unknown ids are
// ignored; steps on a dependency cycle (possible only in a plan that failed
// validation) come together in one last level.
func (p *Plan) Levels() [][]*Step {
	n := len(p.Steps)
	idx := make(map[string]int, n)
	for i, s := range p.Steps {
		if _, dup := idx[s.ID]; !dup {
			idx[s.ID] = i
		}
	}
	// Kahn's algorithm in plan order: a step's level is fixed once all its
	// dependencies are placed.
	pending := make([]int, n)
	dependents := make([][]int, n)
	for i, s := range p.Steps {
		seen := map[int]bool{}
		for _, d := range s.Deps {
			if j, ok := idx[d]; ok && !seen[j] {
				seen[j] = true
				pending[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	level := make([]int, n)
	placed := make([]bool, n)
	queue := make([]int, 0, n)
	for i := range pending {
		if pending[i] == 0 {
			queue = append(queue, i)
		}
	}
	depth := 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		placed[i] = true
		if level[i]+1 > depth {
			depth = level[i] + 1
		}
		for _, j := range dependents[i] {
			if level[i]+1 > level[j] {
				level[j] = level[i] + 1
			}
			pending[j]--
			if pending[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	out := make([][]*Step, depth, depth+1)
	var stuck []*Step
	for i, s := range p.Steps {
		if !placed[i] {
			stuck = append(stuck, s)
			continue
		}
		out[level[i]] = append(out[level[i]], s)
	}
	if len(stuck) > 0 {
		out = append(out, stuck)
	}
	return out
}
