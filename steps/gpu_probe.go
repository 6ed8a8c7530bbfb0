package steps

import (
	"context"
	"errors"

	"github.com/zclconf/go-cty/cty"

	"lockstep/targets"
)

type gpuProbe struct{ t targets.Target }

func newGPUProbe(_ context.Context, t targets.Target, _ ProbeSpec) (Probe, error) {
	return &gpuProbe{t: t}, nil
}

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

// Permanent reports whether a probe's error cannot go away by waiting, so
// the step fails at once instead of counting it as "not yet".
func Permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
