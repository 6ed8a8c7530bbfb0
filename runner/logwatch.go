package runner

import (
	"context"
	"time"

	"lockstep/targets"
)

// While a step waits, its followed logs are watched where the target can
// (targets.FileWatcher: inotify locally, GNU tail -F on an SSH host): a
// signal wakes the wait and the followers are read at once, instead of at
// the next followEvery. The poll goes on, slower, as a net for what a
// watch cannot see (a launch's log moved to another directory and still
// written, on an SSH host); a watch that cannot be set up, or that ends
// before its step (a directory moved, the connection dropped), leaves
// the followers polled as before, and the user is not told: nothing
// they can do differs.
const (
	followSafety       = 250 * time.Millisecond
	followSafetyRemote = time.Second
)

// logWatch is a step's watch of its followed logs, set up once, on the
// step's first wait, in the background: the wait polls meanwhile.
type logWatch struct {
	ready chan struct{}   // closed once set up, or failed
	c     <-chan struct{} // the signals; nil if it failed (read after ready)
	err   error           // why it failed (read after ready), kept for a debugger
	seen  bool            // the wait has taken in that it is ready
	woke  time.Time       // when a signal last started a turn
	stop  context.CancelFunc
}

// watchLogs returns the step's watch of its followers, starting it on the
// first call; nil when the target cannot watch.
func (s *stepRun) watchLogs(ctx context.Context) *logWatch {
	if s.logWatch != nil {
		return s.logWatch
	}
	fw, ok := fileWatcher(s.t)
	if !ok {
		return nil
	}
	var paths []string
	for _, f := range s.followers {
		p := f.Path()
		if !isLocal(s.t) && s.sensitivePath(p) {
			// On a host the watch's tail shows the file's name in its
			// command line, which anyone there can read: a path holding
			// a secret is polled.
			return nil
		}
		paths = append(paths, p)
	}
	wctx, stop := context.WithCancel(ctx)
	w := &logWatch{ready: make(chan struct{}), stop: stop}
	s.logWatch = w
	go func() {
		defer close(w.ready)
		w.c, w.err = fw.WatchFiles(wctx, paths...)
	}()
	return w
}

// endWatch ends the step's watch and waits until nothing of it is left
// running (on the target too).
func (s *stepRun) endWatch() {
	w := s.logWatch
	if w == nil {
		return
	}
	w.stop()
	<-w.ready
	if w.c != nil {
		for range w.c {
		}
	}
}

// sensitivePath reports whether p holds a sensitive value the run knows
// of: the guard or the step's inputs would hide part of it.
func (s *stepRun) sensitivePath(p string) bool {
	if s.r.guard.text(p) != p || s.inputs.text(p) != p {
		return true
	}
	for _, red := range s.probeInputs {
		if red.text(p) != p {
			return true
		}
	}
	return false
}

// fileWatcher is t as a FileWatcher, through the runner's own wrapping.
func fileWatcher(t targets.Target) (targets.FileWatcher, bool) {
	if d, ok := t.(*defaulted); ok {
		t = d.Target
	}
	fw, ok := t.(targets.FileWatcher)
	return fw, ok
}
