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
//
// Nor does a reader that stops reading (`| less`, not scrolled) hold the
// run up: writes go to a queue that a goroutine of the output drains, so
// a step never waits on its view and never times out for it. Past
// queueLimit bytes waiting, new writes are dropped and counted; close, at
// the end of the command, waits for the reader to take the rest.
type output struct {
	name string // "stdout"
	w    io.Writer

	mu       sync.Mutex
	cond     *sync.Cond // signalled when queue gains bytes or drains
	queue    []byte
	writing  bool // the drainer holds bytes taken from queue
	closed   bool
	err      error
	at       time.Time
	dropped  int64
	overflow int64 // bytes dropped because the reader did not keep up
	lost     func(msg string)
}

// queueLimit is how much output may wait for a slow reader.
const queueLimit = 4 << 20

func newOutput(name string, w io.Writer) *output {
	o := &output{name: name, w: w}
	o.cond = sync.NewCond(&o.mu)
	go o.drain()
	return o
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		// After close (a message at the very end): straight through.
		if o.err == nil {
			if _, err := o.w.Write(p); err != nil {
				o.err = err
			}
		}
	case o.err != nil:
		o.dropped += int64(len(p))
	case len(o.queue)+len(p) > queueLimit:
		o.overflow += int64(len(p))
	default:
		o.queue = append(o.queue, p...)
		o.cond.Broadcast()
	}
	// The caller (a view, a message) has nothing better to do with an
	// error: the run must not stop for it.
	return len(p), nil
}

// drain writes what is queued, for as long as the process lives: an
// output lasts the whole command.
func (o *output) drain() {
	var chunk []byte
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed {
			o.cond.Wait()
		}
		if o.closed {
			o.mu.Unlock()
			return
		}
		chunk, o.queue = o.queue, chunk[:0]
		o.writing = true
		o.mu.Unlock()

		n, err := o.w.Write(chunk)

		o.mu.Lock()
		o.writing = false
		var lost func(string)
		var msg string
		if err != nil && o.err == nil {
			o.err, o.at = err, time.Now()
			o.dropped += int64(len(chunk) - n)
			lost, msg = o.lost, o.messageLocked()
		}
		if o.err != nil {
			o.dropped += int64(len(o.queue))
			o.queue = o.queue[:0]
		}
		o.cond.Broadcast()
		o.mu.Unlock()
		if lost != nil {
			lost(msg)
		}
	}
}

// close waits until everything queued has been written (or dropped,
// when writing failed), ends the drainer, and returns how many bytes a
// slow reader missed.
func (o *output) close() (overflow int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.queue) > 0 || o.writing {
		o.cond.Wait()
	}
	o.closed = true
	o.cond.Broadcast()
	return o.overflow
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
