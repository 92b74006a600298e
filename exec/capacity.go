package exec

import (
	"bufio"
	"bytes"
	"context"
	osexec "os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/spec"
)

// MachineCapacity is this machine's capacity (README "Capacity and
// requests"): its CPUs (runtime.NumCPU), its physical memory (Linux: MemTotal
// of /proc/meminfo; macOS: the hw.memsize sysctl; elsewhere 0, unknown: no
// limit) and its GPUs (the lines
// `nvidia-smi -L` prints when that command is in PATH, given at most 3s;
// else 0), which are looked up only when gpus is true: starting
// nvidia-smi costs a run that requests no GPU tens of milliseconds and
// more. Each is measured once per process.
func MachineCapacity(gpus bool) spec.Capacity {
	machineOnce.Do(func() {
		machine = spec.Capacity{CPUs: runtime.NumCPU(), Memory: physicalMemory()}
	})
	c := machine
	if gpus {
		gpusOnce.Do(func() { machineGPUs = nvidiaGPUs() })
		c.GPUs = machineGPUs
	}
	return c
}

var (
	machineOnce, gpusOnce sync.Once
	machine               spec.Capacity
	machineGPUs           int
)

// memTotal reads the MemTotal line of /proc/meminfo ("MemTotal: 16314436
// kB") in bytes; 0 without one.
func memTotal(data []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "MemTotal:" {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		if len(f) > 2 && strings.EqualFold(f[2], "kB") {
			n *= 1024
		}
		return n
	}
	return 0
}

// nvidiaGPUs counts the GPUs `nvidia-smi -L` lists (one "GPU N: ..." line
// each); 0 when the command is not there, fails or takes over 3s.
func nvidiaGPUs() int {
	path, err := osexec.LookPath("nvidia-smi")
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, path, "-L").Output()
	if err != nil {
		return 0
	}
	return countGPULines(out)
}

// countGPULines counts the lines of nvidia-smi -L that name a GPU (its MIG
// devices, indented under it, are not counted).
func countGPULines(out []byte) int {
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "GPU ") {
			n++
		}
	}
	return n
}
