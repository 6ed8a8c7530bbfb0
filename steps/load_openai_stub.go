package steps

import (
	"errors"
	"time"

	"github.com/zclconf/go-cty/cty"
)

func newOpenAILoad(a map[string]cty.Value, str func(string, string) string, num func(string, int) int, flt func(string) float64, dur func(string) time.Duration, headers map[string]string) (Load, error) {
	return nil, errors.New("openai loads arrive with the loads package")
}
