package steps

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"lockstep/targets"
)

type gpuProbe struct{ t targets.Target }

func newGPUProbe(_ context.Context, t targets.Target, _ ProbeSpec) (Probe, error) {
	return &gpuProbe{t: t}, nil
}

func (p *gpuProbe) Observe(ctx context.Context) (cty.Value, error) {
	return cty.NilVal, errGPUUnwired
}
