//go:build !linux

package loads

import "net"

// quickSyscalls: only Linux reads and writes sockets with raw system
// calls (rawio_linux.go).
func quickSyscalls(nc net.Conn) net.Conn { return nc }
