package targets

// Watching files on a host: one session per watch runs GNU tail -F on the
// host, and whatever tail prints (a line written, "file truncated", "has
// been replaced") is a signal that the files may have changed; its text
// is dropped. tail -F rather than inotifywait: inotifywait
// (inotify-tools) is missing on most hosts, while GNU coreutils' tail is
// on every glibc Linux, uses inotify for -F (the directory, for what
// arrives at the name, and the file) and is built to be followed by a
// pipe (it flushes each write). A tail that would poll instead (BusyBox's,
// or GNU's on NFS, over a symbolic link, out of inotify watches) makes the
// watch fail, and the caller polls as before.
//
// Nothing of a watch outlives it on the host. The session's shell reads
// a heartbeat from lockstep on its stdin: when its stdin ends (the watch
// ended and lockstep closed it, or sshd closed it as the connection
// dropped) or no beat came for KeepaliveMax+1 keepalive intervals (a link
// that died silently, which sshd may not notice for hours), it kills its
// tails and exits; each tail also exits on its own once that shell is
// gone (tail --pid). Every process of a watch carries a mark of its own,
// as a launch's do, and what is still there when a cancelled watch ends
// is stopped by it. The files' directories reach the shell on its stdin,
// never in a command line; tail's argv holds their base names only.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// watchMark is in the command line of every watch's shell, so that
// Processes leaves it and what it runs out: a process probe matching a
// log's name must not find lockstep's tail of it.
const watchMark = "lockstep-watch"

// watchLoop is the shell of a watch: it reads the script that follows it
// on stdin up to the token line ($1), then runs it; stdin then carries
// the heartbeat.
const watchLoop = `t=$1
s=
while IFS= read -r l; do
	[ "$l" = "$t" ] && break
	s="$s$l
"
done
eval "$s"
`

// watchScript starts one tail per directory (w DIR NAME...), names
// relative to it, waits until each has its inotify watches (fdinfo shows
// one "inotify wd:" line per inode watched: each directory and each file
// there), then says so on stdout, where tail writes too: the token and 0,
// or a reason and the token and 1 (no). What came before on stdout (the
// login shell's chatter, tail's "cannot open" for a file not there yet)
// is dropped: it tells of no change. Then the shell lives as long as
// beats come.
//
// Each tail also follows an empty file of the watch's own (the keeper,
// in the user's private state directory, removed as the shell exits):
// GNU tail polls instead of watching when none of its files exists, and
// a log is often followed before it is created.
const watchScript = `pids= want=
no() { kill $pids 2>/dev/null; printf '\n%s\n%s 1\n' "$1" "$t"; exit 0; }
case $(tail --version 2>/dev/null) in
*"GNU coreutils"*) ;;
*) no "tail is not GNU coreutils' (it would poll, not watch)" ;;
esac
(umask 077 && mkdir -p "$d") || no "cannot make $d"
[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || no "$d is not a private directory of this user"
k="$d/watch.$$"
trap 'rm -f "$k"' EXIT
trap 'exit 1' TERM INT HUP
: >"$k" || no "cannot make $k"
w() {
	wd=$1
	shift
	[ -d "$wd" ] || no "no directory $wd"
	n=3
	[ "$wd" -ef "$d" ] && n=2
	for f in "$@"; do [ -e "$wd/$f" ] && n=$((n+1)); done
	( cd -- "$wd" && exec tail -c 0 -F --pid=$$ -- "$k" "$@" ) </dev/null 2>&1 &
	pids="$pids $!" want="$want $!:$n"
}
`

// watchReady follows the script's w lines.
const watchReady = `i=0
for e in $want; do
	p=${e%:*} n=${e#*:}
	while [ "$(cat /proc/$p/fdinfo/* 2>/dev/null | grep -c '^inotify wd:')" -lt "$n" ]; do
		kill -0 "$p" 2>/dev/null || no "tail exited"
		i=$((i+1))
		[ $i -gt 200 ] && no "tail did not watch with inotify"
		sleep 0.005
	done
done
printf '%s 0\n' "$t"
while [ "$(timeout "$beat" head -c 1)" = . ]; do :; done
kill $pids 2>/dev/null
wait
`

// watchReadyWait bounds how long a watch takes to start: a session, the
// login shell, the tails.
const watchReadyWait = 10 * time.Second

// watchStopWait bounds how long an ended watch waits for its shell to
// exit before it stops what carries its mark.
const watchStopWait = 3 * time.Second

// WatchFiles watches paths on the host (see FileWatcher and the top of
// this file). It needs GNU tail on the host and, for each path, its
// directory; a path's base name is in tail's command line on the host.
// One watch at a time per target: another one asked for meanwhile waits
// a little for it, then fails.
func (s *SSH) WatchFiles(ctx context.Context, paths ...string) (<-chan struct{}, error) {
	w, err := s.watch(ctx, paths)
	if err != nil {
		return nil, err
	}
	return w.c, nil
}

// sshWatch is one watch in progress.
type sshWatch struct {
	c    chan struct{}
	mark string
}

func (s *SSH) watch(ctx context.Context, paths []string) (*sshWatch, error) {
	if len(paths) == 0 {
		return nil, s.errorf("watch: no file to watch")
	}
	select {
	case s.watchSessions <- struct{}{}:
	case <-time.After(watchStopWait):
		return nil, s.errorf("watch: another watch holds the session")
	case <-ctx.Done():
		return nil, s.errorf("watch: %w", ctx.Err())
	}
	w, err := s.startWatch(ctx, paths)
	if err != nil {
		<-s.watchSessions
	}
	return w, err
}

// startWatch starts a watch in the session slot watch took; once it has
// started, its end frees the slot.
func (s *SSH) startWatch(ctx context.Context, paths []string) (*sshWatch, error) {
	mark, err := newMark()
	if err != nil {
		return nil, s.errorf("watch: %w", err)
	}
	lim, _ := markLimit(mark)
	beat := s.cfg.KeepaliveInterval
	if beat <= 0 {
		beat = 5 * time.Second
	}
	lifeline := beat * time.Duration(max(s.cfg.KeepaliveMax, 1)+1)
	var b strings.Builder
	fmt.Fprintf(&b, "export %s=1\nprlimit --pid $$ --rttime=%d: >/dev/null 2>&1\n", markEnv(mark), lim)
	fmt.Fprintf(&b, "beat=%.3f\n", lifeline.Seconds())
	b.WriteString(stateDir)
	b.WriteString(watchScript)
	for _, dir := range watchDirs(paths) {
		b.WriteString("w " + remotePath(dir.path))
		for _, n := range dir.names {
			b.WriteString(" " + shellQuote(n))
		}
		b.WriteString("\n")
	}
	b.WriteString(watchReady)

	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := c.client.NewSession()
	if err != nil {
		if c.lost() {
			return nil, s.disconnected(c, "watch")
		}
		return nil, s.errorf("watch: open session: %w", err)
	}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sess.Close()
		return nil, s.errorf("watch: %w", err)
	}
	tok := token()
	if err := sess.Start("exec /bin/sh -c " + shellQuote(watchLoop) + " " + watchMark + " " + tok); err != nil {
		sess.Close()
		return nil, s.errorf("watch: start: %w", err)
	}
	ended := make(chan struct{})
	go func() { _ = sess.Wait(); close(ended) }()
	go func() { _, _ = io.WriteString(stdin, b.String()+tok+"\n") }()

	w := &sshWatch{c: make(chan struct{}, 1), mark: mark}
	type frame struct {
		said []byte
		code int
		err  error
	}
	ready := make(chan frame, 1)
	go func() {
		r := bufio.NewReader(stdout)
		said, code, err := readFrame(r, tok, true)
		ready <- frame{said, code, err}
		if err != nil || code != 0 {
			return
		}
		// From here whatever tail prints is a signal; the text itself
		// is not kept.
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				signal(w.c)
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	// stop ends the session and waits for the shell to have exited on the
	// host; what is left then (the shell did not answer) is stopped by
	// its mark.
	stop := func(cause context.Context) {
		_ = stdin.Close()
		t := time.NewTimer(watchStopWait)
		defer t.Stop()
		select {
		case <-ended:
		case <-c.done:
		case <-t.C:
			if c.alive() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(cause), sshOrphanStop)
				_ = s.Stop(sctx, Process{Mark: mark}, 0)
				cancel()
			}
		}
		sess.Close()
	}
	failed := func(err error) (*sshWatch, error) {
		stop(ctx)
		return nil, err
	}
	wait := time.NewTimer(watchReadyWait)
	defer wait.Stop()
	select {
	case f := <-ready:
		switch {
		case f.err != nil:
			return failed(s.errorf("watch: the host's shell ended before it was ready: %w", f.err))
		case f.code != 0:
			lines := strings.Split(strings.TrimSpace(string(f.said)), "\n")
			return failed(s.errorf("watch: %s", clip([]byte(lines[len(lines)-1]))))
		}
	case <-wait.C:
		return failed(s.errorf("watch: not ready after %s", watchReadyWait))
	case <-ctx.Done():
		return failed(s.errorf("watch: %w", ctx.Err()))
	case <-c.done:
		stop(ctx)
		return nil, s.disconnected(c, "watch")
	}

	go func() {
		defer func() { <-s.watchSessions }()
		defer close(w.c)
		tick := time.NewTicker(beat)
		defer tick.Stop()
		beats := make(chan struct{}, 1)
		go func() {
			// A write can wait on a full window; a closed session ends it.
			for range beats {
				if _, err := io.WriteString(stdin, "."); err != nil {
					return
				}
			}
		}()
		defer close(beats)
		for {
			select {
			case <-tick.C:
				signal(beats)
			case <-ctx.Done():
				stop(ctx)
				return
			case <-ended:
				sess.Close()
				return
			case <-c.done:
				sess.Close()
				return
			}
		}
	}()
	return w, nil
}

// watchedDirs is one directory of a watch and the names watched in it.
type watchedDirs struct {
	path  string
	names []string
}

// watchDirs groups paths by directory, in the order first seen.
func watchDirs(paths []string) []watchedDirs {
	var out []watchedDirs
	at := map[string]int{}
	for _, p := range paths {
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case dir == "" && strings.HasPrefix(p, "/"):
			dir = "/"
		case dir == "":
			dir = "."
		}
		i, ok := at[dir]
		if !ok {
			i = len(out)
			at[dir] = i
			out = append(out, watchedDirs{path: dir})
		}
		out[i].names = append(out[i].names, name)
	}
	return out
}

// watchProcesses is the set of a watch's processes in a listing: its
// shells (watchMark in the command line) and what descends from them
// (tail, and the heartbeat's timeout and head).
func watchProcesses(all []procSeen) map[int]bool {
	in := map[int]bool{}
	for _, p := range all {
		if strings.Contains(p.command, watchMark) {
			in[p.stat.PID] = true
		}
	}
	for grew := len(in) > 0; grew; {
		grew = false
		for _, p := range all {
			if !in[p.stat.PID] && in[p.stat.PPID] {
				in[p.stat.PID], grew = true, true
			}
		}
	}
	return in
}
