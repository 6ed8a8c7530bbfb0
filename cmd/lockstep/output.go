package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// output is stdout or stderr as a run writes to them. A write that fails
// never ends the run: the reader of a pipe went away (`lockstep run
// plan.hcl | head -3`), the terminal closed, the disk behind a redirect
// filled. The run goes on to its verdict (its record keeps everything),
// later writes are dropped, and the first failure is told, once, to the
// function set with onLost, which puts it in the record.
type output struct {
	name string // "stdout"
	w    io.Writer

	mu      sync.Mutex
	err     error
	at      time.Time
	dropped int64
	lost    func(msg string)
}

func newOutput(name string, w io.Writer) *output { return &output{name: name, w: w} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	if o.err != nil {
		o.dropped += int64(len(p))
		o.mu.Unlock()
		return len(p), nil
	}
	n, err := o.w.Write(p)
	if err == nil {
		o.mu.Unlock()
		return n, nil
	}
	o.err, o.at = err, time.Now()
	o.dropped += int64(len(p) - n)
	lost := o.lost
	msg := o.messageLocked()
	o.mu.Unlock()
	if lost != nil {
		lost(msg)
	}
	// The caller (a view, a message) has nothing better to do with the
	// error: the run must not stop for it.
	return len(p), nil
}

// onLost sets what is told of the first failed write, at once if one has
// already failed (an earlier attempt of a matrix); nil stops telling.
func (o *output) onLost(fn func(msg string)) {
	o.mu.Lock()
	o.lost = fn
	failed := o.err != nil
	msg := o.messageLocked()
	o.mu.Unlock()
	if fn != nil && failed {
		fn(msg)
	}
}

func (o *output) messageLocked() string {
	if o.err == nil {
		return ""
	}
	what := "writing " + o.name + " failed"
	switch {
	case errors.Is(o.err, syscall.EPIPE):
		what = o.name + " was closed by its reader"
	case errors.Is(o.err, syscall.EIO):
		what = o.name + "'s terminal is gone"
	}
	return fmt.Sprintf("%s at %s (%v): the run goes on; from there, its output is only in the record", what, o.at.Format("15:04:05.000"), o.err)
}

// fileOf is the *os.File behind w, through an output: a view asks
// whether it is a terminal.
func fileOf(w io.Writer) (*os.File, bool) {
	if o, ok := w.(*output); ok {
		w = o.w
	}
	f, ok := w.(*os.File)
	return f, ok
}
