//go:build unix

package cpubench

import (
	"syscall"
	"time"
)

func now() Mark {
	m := Mark{ok: true}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return Mark{}
	}
	m.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		m.children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return m
}
