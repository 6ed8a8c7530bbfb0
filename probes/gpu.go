package probes

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"lockstep/schema"
	"lockstep/targets"
)

// GPU is the gpu probe: it reads the GPUs' state with nvidia-smi on the
// target. It has no attributes.
type GPU struct{}

// gpuDefaults is the gpu probe's config.
func gpuDefaults() *GPU { return &GPU{} }

func gpuKind() Kind {
	return Kind{
		Name: "gpu", Doc: "reads the GPUs' state with nvidia-smi",
		Defaults: func() Config { return gpuDefaults() },
		Outputs: []schema.Output{
			{Name: "gpus", Type: cty.DynamicPseudoType, Doc: "one object per GPU: index, name, memory_used_mib, memory_total_mib, utilization_percent, temperature_c"},
			{Name: "processes", Type: cty.DynamicPseudoType, Doc: "one object per GPU process: gpu, pid, name, memory_used_mib"},
			{Name: "count", Type: cty.Number, Doc: "number of GPUs"},
		},
	}
}

func (c *GPU) Check() error { return nil }

func (c *GPU) Summary() string { return "" }

func (c *GPU) New(_ context.Context, t targets.Target, _ Spec) (Probe, error) {
	return &gpuProbe{t: t}, nil
}

type gpuProbe struct{ t targets.Target }

func (p *gpuProbe) Observe(ctx context.Context) (cty.Value, error) {
	gpus, procs, err := queryGPUs(ctx, p.t)
	if err != nil {
		return cty.NilVal, err
	}
	return gpuValue(gpus, procs), nil
}

// A missing driver will not appear by waiting: a step reading the gpu
// probe fails at once rather than at its timeout.
func (e *GPUDriverError) Permanent() bool { return true }

// The gpu probe asks nvidia-smi two questions on the target: the state of
// each GPU, and which processes hold GPU memory. Both in CSV without header
// or units, so each line is one record of plain numbers.
const (
	gpuQueryCommand = "nvidia-smi --query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,power.draw,power.limit,temperature.gpu --format=csv,noheader,nounits"
	gpuAppsCommand  = "nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits"
)

// GPUState is one line of nvidia-smi --query-gpu. A reading nvidia-smi cannot
// give ("[N/A]", "[Not Supported]": utilization in MIG mode, power on some
// boards) is nil, and null in the probe's value, never a made-up zero.
type GPUState struct {
	Index          int
	Name           string
	UUID           string
	MemoryUsedMiB  *float64
	MemoryTotalMiB *float64
	UtilizationPct *float64
	PowerDrawW     *float64
	PowerLimitW    *float64
	TemperatureC   *float64
}

// GPUProcess is one line of nvidia-smi --query-compute-apps: a process
// holding memory on a GPU (a process on several GPUs has a line for each).
type GPUProcess struct {
	PID int
	// GPUIndex is the index of the GPU whose UUID is GPUUUID, -1 until it
	// is matched (matchGPUs) or when no listed GPU has that UUID.
	GPUIndex      int
	GPUUUID       string
	UsedMemoryMiB *float64 // nil where the driver will not say (some containers)
	Name          string   // "" where the driver will not say ("[Not Found]")
}

// GPUDriverError says nvidia-smi could not report on the GPUs at all: it is
// not installed, or the driver is not loaded or does not match its library.
// A box whose driver works but sees no GPU is not an error: count is 0.
type GPUDriverError struct {
	Problem  string // what is wrong, for a person: "no NVIDIA driver is loaded"
	ExitCode int    // nvidia-smi's exit status; 0 when not known
	Output   string // the first line nvidia-smi (or the shell) printed
}

func (e *GPUDriverError) Error() string {
	msg := "gpu: " + e.Problem
	if e.ExitCode != 0 {
		msg += fmt.Sprintf(": nvidia-smi exit status %d", e.ExitCode)
	}
	if e.Output != "" {
		msg += fmt.Sprintf(": %q", e.Output)
	}
	return msg
}

// driverProblem recognises what nvidia-smi and the shell print when there is
// no usable driver, whatever the exit status.
func driverProblem(out []byte) (problem string, ok bool) {
	switch {
	case bytes.Contains(out, []byte("couldn't communicate with the NVIDIA driver")):
		return "no NVIDIA driver is loaded on the target", true
	case bytes.Contains(out, []byte("Driver/library version mismatch")):
		return "the NVIDIA driver and its library differ in version on the target (updated without a reboot?)", true
	case bytes.Contains(out, []byte("Failed to initialize NVML")):
		return "NVML failed to initialize on the target", true
	case bytes.Contains(out, []byte("nvidia-smi: not found")),
		bytes.Contains(out, []byte("nvidia-smi: command not found")),
		bytes.Contains(out, []byte("nvidia-smi: No such file or directory")):
		return "nvidia-smi is not installed on the target (or not on its PATH)", true
	}
	return "", false
}

// firstLine is the first non-blank line of out, trimmed.
func firstLine(out []byte) string {
	for line := range strings.Lines(string(out)) {
		if l := strings.TrimSpace(line); l != "" {
			return l
		}
	}
	return ""
}

// checkNvidiaSMI turns a finished nvidia-smi run into an error: a
// *GPUDriverError when there is no usable driver, another error for any
// other failure, nil when its stdout can be parsed.
func checkNvidiaSMI(res targets.Result) error {
	both := append(append([]byte{}, res.Stdout...), res.Stderr...)
	if problem, ok := driverProblem(both); ok {
		return &GPUDriverError{Problem: problem, ExitCode: res.ExitCode, Output: firstLine(both)}
	}
	if res.ExitCode == 127 {
		return &GPUDriverError{Problem: "nvidia-smi is not installed on the target (or not on its PATH)", ExitCode: 127, Output: firstLine(both)}
	}
	if isNoDevices(res.Stdout) {
		// The driver answers and sees no GPU (exit status 6): an
		// observation, count 0, for the plan's conditions to judge.
		return nil
	}
	if res.ExitCode != 0 {
		if res.Signal != "" {
			return fmt.Errorf("gpu: nvidia-smi killed by %s: %q", res.Signal, firstLine(both))
		}
		return fmt.Errorf("gpu: nvidia-smi exit status %d: %q", res.ExitCode, firstLine(both))
	}
	return nil
}

func isNoDevices(out []byte) bool {
	return strings.TrimSpace(string(out)) == "No devices were found"
}

// queryGPUs runs both nvidia-smi queries on t and parses them, processes
// matched to their GPU.
func queryGPUs(ctx context.Context, t targets.Target) ([]GPUState, []GPUProcess, error) {
	res, err := t.Run(ctx, targets.Command{Line: gpuQueryCommand})
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: running nvidia-smi on %s: %w", t.Name(), err)
	}
	if err := checkNvidiaSMI(res); err != nil {
		return nil, nil, err
	}
	gpus, err := parseGPUs(res.Stdout)
	if err != nil {
		return nil, nil, err
	}
	if len(gpus) == 0 {
		// No GPU, so no process on one: spare the second round trip.
		return gpus, nil, nil
	}
	res, err = t.Run(ctx, targets.Command{Line: gpuAppsCommand})
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: running nvidia-smi on %s: %w", t.Name(), err)
	}
	if err := checkNvidiaSMI(res); err != nil {
		return nil, nil, err
	}
	procs, err := parseGPUApps(res.Stdout)
	if err != nil {
		return nil, nil, err
	}
	matchGPUs(procs, gpus)
	return gpus, procs, nil
}

// gpuFields is the number of fields gpuQueryCommand asks for.
const gpuFields = 9

// parseGPUs parses the output of gpuQueryCommand.
func parseGPUs(out []byte) ([]GPUState, error) {
	if problem, ok := driverProblem(out); ok {
		return nil, &GPUDriverError{Problem: problem, Output: firstLine(out)}
	}
	if isNoDevices(out) {
		return []GPUState{}, nil
	}
	gpus := []GPUState{}
	for n, line := range nonBlankLines(out) {
		f := splitCSV(line)
		if len(f) < gpuFields {
			return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: want %d fields, got %d", n, line, gpuFields, len(f))
		}
		// A name holding a comma spreads over more fields; the fields
		// after it are fixed, so join the excess back into the name.
		if extra := len(f) - gpuFields; extra > 0 {
			f = append([]string{f[0], strings.Join(f[1:2+extra], ", ")}, f[2+extra:]...)
		}
		index, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: index %q is not a number", n, line, f[0])
		}
		g := GPUState{Index: index, Name: f[1], UUID: f[2]}
		for i, dst := range []**float64{&g.MemoryUsedMiB, &g.MemoryTotalMiB, &g.UtilizationPct, &g.PowerDrawW, &g.PowerLimitW, &g.TemperatureC} {
			v, err := reading(f[3+i])
			if err != nil {
				return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: field %d: %w", n, line, 4+i, err)
			}
			*dst = v
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// parseGPUApps parses the output of gpuAppsCommand. GPUIndex is left -1:
// matchGPUs fills it in from the GPUs' UUIDs.
func parseGPUApps(out []byte) ([]GPUProcess, error) {
	if problem, ok := driverProblem(out); ok {
		return nil, &GPUDriverError{Problem: problem, Output: firstLine(out)}
	}
	procs := []GPUProcess{}
	for n, line := range nonBlankLines(out) {
		if line == "No running processes found" || line == "No devices were found" {
			// Older drivers say so even with noheader.
			continue
		}
		// The name is last and may hold commas: split at most 4 ways.
		f := strings.SplitN(line, ",", 4)
		if len(f) < 4 {
			return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: want 4 fields, got %d", n, line, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: pid %q is not a number", n, line, f[0])
		}
		mem, err := reading(f[2])
		if err != nil {
			return nil, fmt.Errorf("gpu: nvidia-smi line %d %q: used memory: %w", n, line, err)
		}
		name := f[3]
		if unknown(name) {
			name = ""
		}
		procs = append(procs, GPUProcess{PID: pid, GPUIndex: -1, GPUUUID: f[1], UsedMemoryMiB: mem, Name: name})
	}
	return procs, nil
}

// matchGPUs sets each process's GPUIndex from its GPU's UUID, -1 when no
// GPU in gpus has it (one that vanished between the two queries).
func matchGPUs(procs []GPUProcess, gpus []GPUState) {
	byUUID := make(map[string]int, len(gpus))
	for _, g := range gpus {
		byUUID[g.UUID] = g.Index
	}
	for i := range procs {
		if idx, ok := byUUID[procs[i].GPUUUID]; ok {
			procs[i].GPUIndex = idx
		} else {
			procs[i].GPUIndex = -1
		}
	}
}

// nonBlankLines yields the 1-based line number and trimmed text of each
// line of out that is not blank.
func nonBlankLines(out []byte) func(yield func(int, string) bool) {
	return func(yield func(int, string) bool) {
		n := 0
		for line := range strings.Lines(string(out)) {
			n++
			if l := strings.TrimSpace(line); l != "" {
				if !yield(n, l) {
					return
				}
			}
		}
	}
}

func splitCSV(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// unknown tells nvidia-smi's placeholders for a value it cannot give:
// "[N/A]", "[Not Supported]", "[Not Found]", "[Unknown Error]", "[GPU
// requires reset]"... all bracketed; bare "N/A" in older drivers.
func unknown(s string) bool {
	return s == "N/A" || (strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"))
}

// reading parses a number, nil for nvidia-smi's "cannot tell".
func reading(s string) (*float64, error) {
	if unknown(s) {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	return &v, nil
}

// gpuObjectType and gpuProcessObjectType are the element types of the
// probe's lists, fixed so that an empty list and a null reading keep them.
func gpuObjectType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"index":            cty.Number,
		"name":             cty.String,
		"uuid":             cty.String,
		"memory_used_mib":  cty.Number,
		"memory_total_mib": cty.Number,
		"utilization_pct":  cty.Number,
		"power_draw_w":     cty.Number,
		"power_limit_w":    cty.Number,
		"temperature_c":    cty.Number,
	})
}

func gpuProcessObjectType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"pid":             cty.Number,
		"gpu_index":       cty.Number,
		"gpu_uuid":        cty.String,
		"used_memory_mib": cty.Number,
		"name":            cty.String,
	})
}

// gpuValue is the gpu probe's value: gpus (list of objects: index, name,
// uuid, memory_used_mib, memory_total_mib, utilization_pct, power_draw_w,
// power_limit_w, temperature_c), processes (list of objects: pid,
// gpu_index, gpu_uuid, used_memory_mib, name) and count (of GPUs). Unknown
// readings, an unknown process name and an unmatched gpu_index are null.
func gpuValue(gpus []GPUState, procs []GPUProcess) cty.Value {
	byUUID := make(map[string]int, len(gpus))
	gs := make([]cty.Value, 0, len(gpus))
	for _, g := range gpus {
		byUUID[g.UUID] = g.Index
		gs = append(gs, cty.ObjectVal(map[string]cty.Value{
			"index":            cty.NumberIntVal(int64(g.Index)),
			"name":             cty.StringVal(g.Name),
			"uuid":             cty.StringVal(g.UUID),
			"memory_used_mib":  numberOrNull(g.MemoryUsedMiB),
			"memory_total_mib": numberOrNull(g.MemoryTotalMiB),
			"utilization_pct":  numberOrNull(g.UtilizationPct),
			"power_draw_w":     numberOrNull(g.PowerDrawW),
			"power_limit_w":    numberOrNull(g.PowerLimitW),
			"temperature_c":    numberOrNull(g.TemperatureC),
		}))
	}
	ps := make([]cty.Value, 0, len(procs))
	for _, p := range procs {
		idx := cty.NullVal(cty.Number)
		if p.GPUIndex >= 0 {
			idx = cty.NumberIntVal(int64(p.GPUIndex))
		} else if i, ok := byUUID[p.GPUUUID]; ok {
			idx = cty.NumberIntVal(int64(i))
		}
		name := cty.NullVal(cty.String)
		if p.Name != "" {
			name = cty.StringVal(p.Name)
		}
		ps = append(ps, cty.ObjectVal(map[string]cty.Value{
			"pid":             cty.NumberIntVal(int64(p.PID)),
			"gpu_index":       idx,
			"gpu_uuid":        cty.StringVal(p.GPUUUID),
			"used_memory_mib": numberOrNull(p.UsedMemoryMiB),
			"name":            name,
		}))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"gpus":      listOf(gpuObjectType(), gs),
		"processes": listOf(gpuProcessObjectType(), ps),
		"count":     cty.NumberIntVal(int64(len(gpus))),
	})
}

func numberOrNull(v *float64) cty.Value {
	if v == nil {
		return cty.NullVal(cty.Number)
	}
	return cty.NumberFloatVal(*v)
}

func listOf(t cty.Type, vs []cty.Value) cty.Value {
	if len(vs) == 0 {
		return cty.ListValEmpty(t)
	}
	return cty.ListVal(vs)
}
