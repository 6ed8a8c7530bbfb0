package probes

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"lockstep/targets"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nvidia-smi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f64(v float64) *float64 { return &v }

func eqReading(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func eqGPU(a, b GPUState) bool {
	return a.Index == b.Index && a.Name == b.Name && a.UUID == b.UUID &&
		eqReading(a.MemoryUsedMiB, b.MemoryUsedMiB) && eqReading(a.MemoryTotalMiB, b.MemoryTotalMiB) &&
		eqReading(a.UtilizationPct, b.UtilizationPct) && eqReading(a.PowerDrawW, b.PowerDrawW) &&
		eqReading(a.PowerLimitW, b.PowerLimitW) && eqReading(a.TemperatureC, b.TemperatureC)
}

func showReading(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func showGPU(g GPUState) string {
	return strings.Join([]string{
		strconv.Itoa(g.Index), g.Name, g.UUID,
		showReading(g.MemoryUsedMiB), showReading(g.MemoryTotalMiB), showReading(g.UtilizationPct),
		showReading(g.PowerDrawW), showReading(g.PowerLimitW), showReading(g.TemperatureC),
	}, " | ")
}

// TestParseGPUsFixtures checks recorded-style outputs: every line becomes a
// GPU, in order, and sample lines read back field by field.
func TestParseGPUsFixtures(t *testing.T) {
	tests := []struct {
		file  string
		count int
		check map[int]GPUState // by position
	}{
		{"h100-idle.gpus.csv", 8, map[int]GPUState{
			0: {0, "NVIDIA H100 80GB HBM3", "GPU-0d951c95-602f-417c-2d01-7e07fc10d0f9", f64(0), f64(81559), f64(0), f64(69.03), f64(700), f64(28)},
		}},
		{"h100-loaded.gpus.csv", 8, map[int]GPUState{
			0: {0, "NVIDIA H100 80GB HBM3", "GPU-0d951c95-602f-417c-2d01-7e07fc10d0f9", f64(78822), f64(81559), f64(98), f64(655.38), f64(700), f64(62)},
			7: {7, "NVIDIA H100 80GB HBM3", "GPU-7c8e4071-2b59-6ba9-31fe-97ea8c90cab1", f64(78194), f64(81559), f64(98), f64(686.25), f64(700), f64(70)},
		}},
		{"b200-loaded.gpus.csv", 8, map[int]GPUState{
			1: {1, "NVIDIA B200", "GPU-4eb8fc1f-3b5c-2844-f739-85764ea1996c", f64(171876), f64(183359), f64(96), f64(889.11), f64(1000), f64(49)},
		}},
		{"unknowns.gpus.csv", 2, map[int]GPUState{
			0: {0, "NVIDIA H100 PCIe", "GPU-c2155774-99cf-eab4-4ac2-c02245d1e6e6", f64(40211), f64(81559), f64(63), nil, f64(350), f64(51)},
			1: {1, "NVIDIA H100 PCIe", "GPU-1b0738b6-2027-c10f-38de-e768d98f85b0", f64(13), f64(81559), nil, f64(61.27), f64(350), nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			gpus, err := parseGPUs(fixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(gpus) != tt.count {
				t.Fatalf("got %d GPUs, want %d", len(gpus), tt.count)
			}
			for i, g := range gpus {
				if g.Index != i {
					t.Errorf("GPU %d has index %d", i, g.Index)
				}
			}
			for i, want := range tt.check {
				if !eqGPU(gpus[i], want) {
					t.Errorf("GPU %d:\n got %s\nwant %s", i, showGPU(gpus[i]), showGPU(want))
				}
			}
		})
	}
}

func TestParseGPUs(t *testing.T) {
	const uuid = "GPU-0d951c95-602f-417c-2d01-7e07fc10d0f9"
	tests := []struct {
		name    string
		in      string
		want    []GPUState
		wantErr string // substring; "" means no error
	}{
		{"empty output", "", []GPUState{}, ""},
		{"no devices", "No devices were found\n", []GPUState{}, ""},
		{"one line", "0, NVIDIA H100 80GB HBM3, " + uuid + ", 1, 81559, 0, 69.88, 700.00, 32\n",
			[]GPUState{{0, "NVIDIA H100 80GB HBM3", uuid, f64(1), f64(81559), f64(0), f64(69.88), f64(700), f64(32)}}, ""},
		{"CRLF, tabs and blank lines", "\r\n0,NVIDIA A100-SXM4-80GB ,\t" + uuid + ",0,81920,0,61.2,400.00,30\r\n\r\n",
			[]GPUState{{0, "NVIDIA A100-SXM4-80GB", uuid, f64(0), f64(81920), f64(0), f64(61.2), f64(400), f64(30)}}, ""},
		{"every reading unknown", "3, NVIDIA H100, " + uuid + ", [N/A], [N/A], [Not Supported], [Unknown Error], N/A, [GPU requires reset]\n",
			[]GPUState{{3, "NVIDIA H100", uuid, nil, nil, nil, nil, nil, nil}}, ""},
		{"name with a comma", "0, Card, Rev 2, " + uuid + ", 1, 2, 3, 4, 5, 6\n",
			[]GPUState{{0, "Card, Rev 2", uuid, f64(1), f64(2), f64(3), f64(4), f64(5), f64(6)}}, ""},
		{"too few fields", "0, NVIDIA H100, " + uuid + "\n", nil, `line 1 "0, NVIDIA H100, ` + uuid + `": want 9 fields, got 3`},
		{"bad number on line 2", "0, A, u0, 1, 2, 3, 4, 5, 6\n1, A, u1, 1, 2, 3, lots, 5, 6\n", nil, `line 2 "1, A, u1, 1, 2, 3, lots, 5, 6": field 7: "lots" is not a number`},
		{"unknown index", "[N/A], A, u0, 1, 2, 3, 4, 5, 6\n", nil, `index "[N/A]" is not a number`},
		{"a GPU fallen off the bus", "Unable to determine the device handle for GPU0000:4E:00.0: Unknown Error\n", nil, "want 9 fields, got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGPUs([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || len(got) != len(tt.want) {
				t.Fatalf("got %d GPUs (nil %v), want %d", len(got), got == nil, len(tt.want))
			}
			for i := range got {
				if !eqGPU(got[i], tt.want[i]) {
					t.Errorf("GPU %d:\n got %s\nwant %s", i, showGPU(got[i]), showGPU(tt.want[i]))
				}
			}
		})
	}
}

func TestParseGPUsNoDriver(t *testing.T) {
	for _, file := range []string{"no-driver.txt", "version-mismatch.txt"} {
		_, err := parseGPUs(fixture(t, file))
		var de *GPUDriverError
		if !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want a *GPUDriverError", file, err)
		}
		_, err = parseGPUApps(fixture(t, file))
		if !errors.As(err, &de) {
			t.Errorf("%s: apps: err = %v, want a *GPUDriverError", file, err)
		}
	}
}

func eqProc(a, b GPUProcess) bool {
	return a.PID == b.PID && a.GPUIndex == b.GPUIndex && a.GPUUUID == b.GPUUUID &&
		eqReading(a.UsedMemoryMiB, b.UsedMemoryMiB) && a.Name == b.Name
}

func TestParseGPUApps(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []GPUProcess
		wantErr string
	}{
		{"none", "", []GPUProcess{}, ""},
		{"none, older driver", "No running processes found\n", []GPUProcess{}, ""},
		{"one", "2183822, GPU-a, 78210, sglang::scheduler_TP0\n",
			[]GPUProcess{{2183822, -1, "GPU-a", f64(78210), "sglang::scheduler_TP0"}}, ""},
		{"name with commas", "7, GPU-a, 10, /opt/a,b/python3, --flag\n",
			[]GPUProcess{{7, -1, "GPU-a", f64(10), "/opt/a,b/python3, --flag"}}, ""},
		{"memory and name hidden", "48121, GPU-a, [N/A], [Not Found]\n",
			[]GPUProcess{{48121, -1, "GPU-a", nil, ""}}, ""},
		{"too few fields", "48121, GPU-a, 10\n", nil, `line 1 "48121, GPU-a, 10": want 4 fields, got 3`},
		{"bad pid", "x, GPU-a, 10, p\n", nil, `pid "x" is not a number`},
		{"bad memory", "1, GPU-a, 10 MiB, p\n", nil, `used memory: "10 MiB" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGPUApps([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %d processes", got, len(tt.want))
			}
			for i := range got {
				if !eqProc(got[i], tt.want[i]) {
					t.Errorf("process %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func parseFixtures(t *testing.T, name string) ([]GPUState, []GPUProcess) {
	t.Helper()
	gpus, err := parseGPUs(fixture(t, name+".gpus.csv"))
	if err != nil {
		t.Fatal(err)
	}
	procs, err := parseGPUApps(fixture(t, name+".apps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return gpus, procs
}

func TestMatchGPUs(t *testing.T) {
	gpus, procs := parseFixtures(t, "h100-loaded")
	procs = append(procs, GPUProcess{PID: 1, GPUIndex: 5, GPUUUID: "GPU-gone"})
	matchGPUs(procs, gpus)
	want := []int{0, 0, 1, 2, 3, 4, 5, 6, 7, -1}
	if len(procs) != len(want) {
		t.Fatalf("%d processes, want %d", len(procs), len(want))
	}
	for i, p := range procs {
		if p.GPUIndex != want[i] {
			t.Errorf("process %d (pid %d on %s): GPUIndex %d, want %d", i, p.PID, p.GPUUUID, p.GPUIndex, want[i])
		}
	}
}

// attr walks a cty value by object keys and list indexes: "gpus", 0, "name".
func attr(t *testing.T, v cty.Value, path ...any) cty.Value {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.GetAttr(p)
		case int:
			v = v.Index(cty.NumberIntVal(int64(p)))
		}
	}
	return v
}

func TestGPUValue(t *testing.T) {
	num := func(f float64) cty.Value { return cty.NumberFloatVal(f) }
	tests := []struct {
		fixture string
		want    map[string]cty.Value // path "gpus.0.name" -> value
	}{
		{"h100-loaded", map[string]cty.Value{
			"count":                       num(8),
			"gpus.#":                      num(8),
			"processes.#":                 num(9),
			"gpus.0.index":                num(0),
			"gpus.0.name":                 cty.StringVal("NVIDIA H100 80GB HBM3"),
			"gpus.0.uuid":                 cty.StringVal("GPU-0d951c95-602f-417c-2d01-7e07fc10d0f9"),
			"gpus.0.memory_used_mib":      num(78822),
			"gpus.0.memory_total_mib":     num(81559),
			"gpus.0.utilization_pct":      num(98),
			"gpus.0.power_draw_w":         num(655.38),
			"gpus.0.power_limit_w":        num(700),
			"gpus.0.temperature_c":        num(62),
			"processes.0.pid":             num(2183410),
			"processes.0.gpu_index":       num(0),
			"processes.0.name":            cty.StringVal("python3"),
			"processes.8.gpu_index":       num(7),
			"processes.8.gpu_uuid":        cty.StringVal("GPU-7c8e4071-2b59-6ba9-31fe-97ea8c90cab1"),
			"processes.8.used_memory_mib": num(78194),
			"processes.8.name":            cty.StringVal("sglang::scheduler_TP7"),
		}},
		{"h100-idle", map[string]cty.Value{
			"count":       num(8),
			"processes.#": num(0),
		}},
		{"unknowns", map[string]cty.Value{
			"count":                       num(2),
			"gpus.0.power_draw_w":         cty.NullVal(cty.Number),
			"gpus.1.utilization_pct":      cty.NullVal(cty.Number),
			"gpus.1.temperature_c":        cty.NullVal(cty.Number),
			"processes.0.used_memory_mib": cty.NullVal(cty.Number),
			"processes.0.name":            cty.NullVal(cty.String),
			"processes.0.gpu_index":       num(0),
			"processes.1.name":            cty.StringVal("/usr/bin/python3"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			gpus, procs := parseFixtures(t, tt.fixture)
			// gpuValue matches processes itself: pass them unmatched.
			v := gpuValue(gpus, procs)
			for path, want := range tt.want {
				var steps []any
				for _, s := range strings.Split(path, ".") {
					if n, ok := atoi(s); ok {
						steps = append(steps, n)
					} else {
						steps = append(steps, s)
					}
				}
				last := steps[len(steps)-1]
				var got cty.Value
				if last == "#" {
					got = attr(t, v, steps[:len(steps)-1]...).Length()
				} else {
					got = attr(t, v, steps...)
				}
				if !got.RawEquals(want) {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
		})
	}
}

func atoi(s string) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}

// TestGPUValueTypes: the value's type does not depend on what was seen, so a
// plan's expression type-checks the same on an idle box, a busy one and one
// without GPUs.
func TestGPUValueTypes(t *testing.T) {
	loaded := gpuValue(parseFixtures(t, "h100-loaded"))
	unknowns := gpuValue(parseFixtures(t, "unknowns"))
	none := gpuValue([]GPUState{}, nil)
	for name, v := range map[string]cty.Value{"unknowns": unknowns, "no GPUs": none} {
		if !v.Type().Equals(loaded.Type()) {
			t.Errorf("%s: type %#v differs from a loaded box's %#v", name, v.Type(), loaded.Type())
		}
	}
	if !none.GetAttr("count").RawEquals(cty.NumberIntVal(0)) || none.GetAttr("gpus").LengthInt() != 0 {
		t.Errorf("no GPUs: %#v", none)
	}
}

func TestCheckNvidiaSMI(t *testing.T) {
	noDriver := fixture(t, "no-driver.txt")
	tests := []struct {
		name   string
		res    targets.Result
		driver bool   // want a *GPUDriverError
		want   string // the whole message; "" means no error
	}{
		{"fine", targets.Result{Stdout: fixture(t, "h100-idle.gpus.csv")}, false, ""},
		{"no devices", targets.Result{ExitCode: 6, Stdout: fixture(t, "no-devices.txt")}, false, ""},
		{"no driver", targets.Result{ExitCode: 9, Stdout: noDriver}, true,
			`gpu: no NVIDIA driver is loaded on the target: nvidia-smi exit status 9: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."`},
		{"version mismatch", targets.Result{ExitCode: 18, Stdout: fixture(t, "version-mismatch.txt")}, true,
			`gpu: the NVIDIA driver and its library differ in version on the target (updated without a reboot?): nvidia-smi exit status 18: "Failed to initialize NVML: Driver/library version mismatch"`},
		{"not installed, dash", targets.Result{ExitCode: 127, Stderr: []byte("sh: 1: nvidia-smi: not found\n")}, true,
			`gpu: nvidia-smi is not installed on the target (or not on its PATH): nvidia-smi exit status 127: "sh: 1: nvidia-smi: not found"`},
		{"not installed, bash", targets.Result{ExitCode: 127, Stderr: []byte("bash: line 1: nvidia-smi: command not found\n")}, true,
			`gpu: nvidia-smi is not installed on the target (or not on its PATH): nvidia-smi exit status 127: "bash: line 1: nvidia-smi: command not found"`},
		{"127 in other words", targets.Result{ExitCode: 127, Stderr: []byte("zsh: no such command\n")}, true,
			`gpu: nvidia-smi is not installed on the target (or not on its PATH): nvidia-smi exit status 127: "zsh: no such command"`},
		{"other failure", targets.Result{ExitCode: 15, Stdout: []byte("Unable to determine the device handle for GPU0000:4E:00.0: Unknown Error\n")}, false,
			`gpu: nvidia-smi exit status 15: "Unable to determine the device handle for GPU0000:4E:00.0: Unknown Error"`},
		{"killed", targets.Result{ExitCode: -1, Signal: "KILL"}, false, `gpu: nvidia-smi killed by KILL: ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkNvidiaSMI(tt.res)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			var de *GPUDriverError
			if errors.As(err, &de) != tt.driver {
				t.Errorf("is a *GPUDriverError: %v, want %v", !tt.driver, tt.driver)
			}
			if tt.driver && de.ExitCode != tt.res.ExitCode {
				t.Errorf("ExitCode = %d, want %d", de.ExitCode, tt.res.ExitCode)
			}
		})
	}
}

// shellTarget runs commands with /bin/sh on this machine, as a target does;
// the gpu probe needs nothing else of a Target.
type shellTarget struct {
	targets.Target
	env []string
}

func (shellTarget) Name() string { return "local" }

func (s shellTarget) Run(ctx context.Context, c targets.Command) (targets.Result, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Line)
	cmd.Env = s.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := targets.Result{Stdout: []byte(stdout.String()), Stderr: []byte(stderr.String())}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.ExitCode = exit.ExitCode()
		err = nil
	}
	return res, err
}

// TestQueryGPUsStandIn runs the probe's real commands against the stand-in
// nvidia-smi script, the way the end-to-end tests will.
func TestQueryGPUsStandIn(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "nvidia-smi"))
	if err != nil {
		t.Fatal(err)
	}
	withStandIn := "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
	tests := []struct {
		name       string
		env        []string
		gpus       int
		procs      int
		driverExit int    // want a *GPUDriverError with this exit status
		errText    string // want another error containing this
	}{
		{"loaded H100s", []string{withStandIn, "NVIDIA_SMI_FIXTURE=h100-loaded"}, 8, 9, 0, ""},
		{"idle H100s", []string{withStandIn, "NVIDIA_SMI_FIXTURE=h100-idle"}, 8, 0, 0, ""},
		{"B200s", []string{withStandIn, "NVIDIA_SMI_FIXTURE=b200-loaded"}, 8, 8, 0, ""},
		{"no devices", []string{withStandIn, "NVIDIA_SMI_FIXTURE=no-devices"}, 0, 0, 0, ""},
		{"no driver", []string{withStandIn, "NVIDIA_SMI_FIXTURE=no-driver"}, 0, 0, 9, ""},
		{"fixture unset", []string{withStandIn}, 0, 0, 9, ""},
		{"version mismatch", []string{withStandIn, "NVIDIA_SMI_FIXTURE=version-mismatch"}, 0, 0, 18, ""},
		{"fixture misspelt", []string{withStandIn, "NVIDIA_SMI_FIXTURE=h100-lodaed"}, 0, 0, 0, "no fixture"},
		{"no nvidia-smi", []string{"PATH=" + t.TempDir()}, 0, 0, 127, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpus, procs, err := queryGPUs(t.Context(), shellTarget{env: tt.env})
			var de *GPUDriverError
			switch {
			case tt.driverExit != 0:
				if !errors.As(err, &de) || de.ExitCode != tt.driverExit {
					t.Fatalf("err = %v, want a *GPUDriverError with exit status %d", err, tt.driverExit)
				}
				return
			case tt.errText != "":
				if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want a plain error containing %q", err, tt.errText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(gpus) != tt.gpus || len(procs) != tt.procs {
				t.Fatalf("%d GPUs and %d processes, want %d and %d", len(gpus), len(procs), tt.gpus, tt.procs)
			}
			for _, p := range procs {
				if p.GPUIndex < 0 {
					t.Errorf("process %d on %s not matched to a GPU", p.PID, p.GPUUUID)
				}
			}
		})
	}
}

func FuzzParseGPUs(f *testing.F) {
	for _, name := range []string{"h100-loaded.gpus.csv", "unknowns.gpus.csv", "no-driver.txt", "no-devices.txt"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		gpus, err := parseGPUs(out)
		if err != nil {
			return
		}
		if n := strings.Count(string(out), "\n") + 1; len(gpus) > n {
			t.Errorf("%d GPUs from %d lines", len(gpus), n)
		}
		gpuValue(gpus, nil) // must not panic whatever was parsed
	})
}

func FuzzParseGPUApps(f *testing.F) {
	for _, name := range []string{"h100-loaded.apps.csv", "unknowns.apps.csv", "no-driver.txt"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		procs, err := parseGPUApps(out)
		if err != nil {
			return
		}
		gpuValue(nil, procs)
	})
}
