package steps

import "errors"

var errGPUUnwired = errors.New("gpu probe: not wired yet")
