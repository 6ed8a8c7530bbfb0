package targets

import "errors"

// ErrDisconnected is wrapped by errors caused by losing the connection to a
// target; the caller may retry after reconnecting.
var ErrDisconnected = errors.New("connection to target lost")
