package plans

import (
	"reflect"
	"testing"

	"lockstep/steps"
)

// TestShapeInBuffer: a step's shape made in a buffer the step before
// left (the check's) is its Shape, for every step of the seed plans.
func TestShapeInBuffer(t *testing.T) {
	var buf []steps.Part
	n := 0
	for _, src := range prescanSeeds(t) {
		p, _ := Parse("t.hcl", src)
		for _, s := range p.Steps {
			sh := s.shape(buf)
			if want := s.Shape(); !reflect.DeepEqual(sh, want) {
				t.Errorf("%s: the shape in a buffer is %+v, Shape %+v", s.Addr(), sh, want)
			}
			if sh.Blocks != nil {
				buf, n = sh.Blocks, n+1
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d steps with blocks", n)
	}
}
