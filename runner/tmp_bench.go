package runner

import "errors"

var errNotYetBuilt = errors.New("benchmark steps arrive with the loads package")
