//go:build !linux

package loads

import "net"

// watchIdle: only Linux is checked for a server closing an idle
// connection (alive_linux.go); elsewhere such a close shows when the next
// request is written on it, as errors_io.
func (c *client1) watchIdle(net.Conn) func() bool { return nil }
