package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FileWatcher is a Target that can say when files may have changed, so a
// follower reads them at once instead of at its next poll. Both targets
// implement it; a caller that gets an error (or a Target without it)
// polls as before.
type FileWatcher interface {
	// WatchFiles signals on the channel it returns each time one of
	// paths may have changed: written to, truncated, renamed away,
	// deleted, or a file created or moved in at its name (a rotation is
	// never missed). A signal says only "look again": it can come for a
	// change that added nothing, and signals coalesce (the channel holds
	// one; the watch never waits for its reader, so it never slows what
	// writes the files). A path need not exist yet; its directory must.
	//
	// The channel is closed when the watch ends: ctx ended (it is closed
	// once nothing of the watch is left running, on the target too), or
	// the watch can no longer see (a watched directory moved or deleted,
	// the connection dropped). The caller then polls.
	WatchFiles(ctx context.Context, paths ...string) (<-chan struct{}, error)
}

var (
	_ FileWatcher = (*Local)(nil)
	_ FileWatcher = (*SSH)(nil)
)

// signal sends on c without waiting: a signal already pending says it all.
func signal(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Events of a watched directory that concern a name in it: its file
// written, created, moved in or out, deleted, its metadata changed
// (chmod, a truncate through ftruncate shows as a modify).
const dirEvents = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_CREATE |
	unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// fileEvents are those of a watched file itself, wherever it is renamed:
// a log rotated away is still written by its writer until it reopens.
const fileEvents = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// maxFileWatches bounds the files watched for each path: the one at the
// name and those rotated away from it that a follower may still read.
const maxFileWatches = 3

// WatchFiles watches paths with inotify (see FileWatcher): each path's
// directory, for what happens at its name, and the file itself, for what
// is written to it after it is renamed away. A file that appears at the
// name is watched from then on. The directory must exist.
func (l *Local) WatchFiles(ctx context.Context, paths ...string) (<-chan struct{}, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch: inotify: %w", err)
	}
	w := &localWatch{fd: fd, dirs: map[int32]*watchedDir{}, files: map[int32]bool{}}
	for _, p := range paths {
		if err := w.add(p); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
	}
	// Non-blocking, the descriptor goes to Go's poller: a Read waits
	// without a thread, and a deadline ends it.
	f := os.NewFile(uintptr(fd), "inotify")
	out := make(chan struct{}, 1)
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	go func() {
		w.read(f, out)
		stop()
		close(out)
		// Closing an inotify descriptor takes milliseconds (the kernel
		// waits out a grace period): the watch has ended already.
		f.Close()
	}()
	return out, nil
}

// localWatch is one inotify instance and what its watch descriptors mean.
type localWatch struct {
	fd    int
	dirs  map[int32]*watchedDir
	files map[int32]bool
}

// watchedDir is a watched directory and the names in it that matter, each
// with the files watched for it, newest last.
type watchedDir struct {
	path  string
	names map[string][]int32
}

func (w *localWatch) add(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	dir, name := filepath.Split(abs)
	wd, err := unix.InotifyAddWatch(w.fd, dir, dirEvents|unix.IN_ONLYDIR)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	d := w.dirs[int32(wd)]
	if d == nil {
		d = &watchedDir{path: dir, names: map[string][]int32{}}
		w.dirs[int32(wd)] = d
	}
	if _, ok := d.names[name]; !ok {
		d.names[name] = nil
	}
	w.watchFile(d, name)
	return nil
}

// watchFile watches the file now at name in d, if there is one, keeping
// at most maxFileWatches for the name.
func (w *localWatch) watchFile(d *watchedDir, name string) {
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(d.path, name), fileEvents)
	if err != nil {
		return // not there (yet): the directory's events tell its arrival
	}
	fwd := int32(wd)
	ws := d.names[name]
	for _, x := range ws {
		if x == fwd {
			return // the same file
		}
	}
	ws = append(ws, fwd)
	w.files[fwd] = true
	if len(ws) > maxFileWatches {
		old := ws[0]
		ws = ws[1:]
		if !w.shared(old, d, name) {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(old))
			delete(w.files, old)
		}
	}
	d.names[name] = ws
}

// shared reports whether another name than (d, name) watches file wd (two
// paths naming one file).
func (w *localWatch) shared(wd int32, d *watchedDir, name string) bool {
	for _, od := range w.dirs {
		for n, ws := range od.names {
			if od == d && n == name {
				continue
			}
			for _, x := range ws {
				if x == wd {
					return true
				}
			}
		}
	}
	return false
}

// errWatchBlind ends a watch that can no longer see its paths.
var errWatchBlind = errors.New("a watched directory was moved or deleted")

// read passes inotify's events on as signals until the descriptor is
// closed or a directory is lost.
func (w *localWatch) read(f *os.File, out chan<- struct{}) {
	// Room for many events, each at most a header and NAME_MAX+1.
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := f.Read(buf)
		if err != nil {
			return
		}
		changed, err := w.events(buf[:n])
		if changed {
			signal(out)
		}
		if err != nil {
			return
		}
	}
}

// events reads a batch of events: whether one concerns a watched path,
// and errWatchBlind once a watched directory is gone from its place.
func (w *localWatch) events(b []byte) (changed bool, err error) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			break
		}
		name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00"))
		b = b[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			changed = true // events were lost: anything may have changed
			continue
		}
		if d := w.dirs[ev.Wd]; d != nil {
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
				return true, errWatchBlind
			}
			if _, ok := d.names[name]; !ok {
				continue // another file of the directory
			}
			changed = true
			if ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
				w.watchFile(d, name)
			}
			continue
		}
		if w.files[ev.Wd] {
			changed = true
			if ev.Mask&unix.IN_IGNORED != 0 {
				w.forget(ev.Wd) // deleted: the kernel dropped the watch
			}
		}
	}
	return changed, nil
}

// forget drops file watch wd, which the kernel has removed.
func (w *localWatch) forget(wd int32) {
	delete(w.files, wd)
	for _, d := range w.dirs {
		for n, ws := range d.names {
			kept := ws[:0]
			for _, x := range ws {
				if x != wd {
					kept = append(kept, x)
				}
			}
			d.names[n] = kept
		}
	}
}
