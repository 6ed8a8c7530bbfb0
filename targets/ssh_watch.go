package targets

// Watching files on a host: each connection has one watcher, a shell in a
// session of its own started by the first watch (the login shell's
// start-up, which a heavy ~/.bashrc makes hundreds of milliseconds, is
// paid once, as for the workers). A watch asks it to run GNU tail -F on
// its files; whatever tail prints (a line written, "file truncated",
// "has been replaced") is a signal that the files may have changed, and
// its text is dropped. When the watch ends, the watcher kills its tails
// and says so; it then idles until the next watch or the connection's
// end.
//
// tail -F rather than inotifywait: inotifywait (inotify-tools) is
// missing on most hosts, while GNU coreutils' tail is on every glibc
// Linux, uses inotify for -F (the directory, for what arrives at the
// name, and the file) and is built to be followed by a pipe (it flushes
// each write). A tail that would poll instead (BusyBox's, or GNU's on
// NFS, over a symbolic link, out of inotify watches) makes the watch
// fail, and the caller polls as before.
//
// Nothing of it outlives the connection on the host. The watcher reads
// lockstep's requests and a heartbeat on its stdin: when its stdin ends
// (lockstep closed the connection, or sshd closed it as the connection
// dropped) it kills its tails and exits; when no beat came for
// KeepaliveMax+1 keepalive intervals (a link that died silently, which
// sshd may not notice for hours) its watchdog kills it; each tail exits
// on its own once the watcher is gone (tail --pid). Every process of the
// watcher carries a mark of its own, as a launch's do. The directories
// reach it on its stdin, never in a command line; tail's argv holds the
// base names only.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// watchMark is in the command line of the watcher's shell, so that
// Processes leaves it and what it runs out: a process probe matching a
// log's name must not find lockstep's tail of it.
const watchMark = "lockstep-watch"

// watchLoop is the watcher's shell: it reads its script on stdin up to
// the token line ($1), then runs it.
const watchLoop = `t=$1
s=
while IFS= read -r l; do
	[ "$l" = "$t" ] && break
	s="$s$l
"
done
eval "$s"
`

// watchScript is the watcher, after its mark, $beat and $d: it makes
// the keeper (an empty file of its own, in the user's private state
// directory, which every tail follows too: GNU tail polls instead of
// watching when none of its files exists, and a log is often followed
// before it is created), starts the watchdog, says it is ready ($t 0),
// then serves requests: a line "." is a beat; any other line is a
// request's token, its script follows up to the token again, and runs
// once the last request's tails are gone. A request's replies are the
// token and 0 (done), or a reason, the token and 1 (no), on stdout,
// where the tails write too.
//
// A watch's request runs w DIR NAME... for each directory (one tail
// each, names relative to it), then ready, which waits until each tail
// has its inotify watches (fdinfo shows one "inotify wd:" line per inode
// watched: each directory and each file there).
const watchScript = `(umask 077 && mkdir -p "$d") || exit 1
[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || { printf '%s is not a private directory of this user\n%s 1\n' "$d" "$t"; exit 0; }
case $(tail --version 2>/dev/null) in
*"GNU coreutils"*) ;;
*) printf '\n%s\n%s 1\n' "tail is not GNU coreutils' (it would poll, not watch)" "$t"; exit 0 ;;
esac
k="$d/watch.$$"
trap 'rm -f "$k" "$k.beat"' EXIT
: >"$k" && : >"$k.beat" || exit 1
pids= want= bad= r=
drop() {
	[ -n "$pids" ] && kill $pids 2>/dev/null && wait $pids 2>/dev/null
	pids= want= bad=
}
ok() { printf '%s 0\n' "$r"; }
no() {
	[ -n "$bad" ] && return
	bad=1
	printf '\n%s\n%s 1\n' "$1" "$r"
}
w() {
	[ -n "$bad" ] && return
	wd=$1
	shift
	[ -d "$wd" ] || { no "no directory $wd"; return; }
	n=3
	[ "$wd" -ef "$d" ] && n=2
	for f in "$@"; do [ -e "$wd/$f" ] && n=$((n+1)); done
	( cd -- "$wd" && exec tail -c 0 -F --pid=$$ -- "$k" "$@" ) </dev/null 2>&1 &
	pids="$pids $!" want="$want $!:$n"
}
ready() {
	[ -n "$bad" ] && { drop; return; }
	i=0
	for e in $want; do
		p=${e%:*} n=${e#*:}
		while [ "$(cat /proc/$p/fdinfo/* 2>/dev/null | grep -c '^inotify wd:')" -lt "$n" ]; do
			kill -0 "$p" 2>/dev/null || { no "tail exited"; drop; return; }
			i=$((i+1))
			[ $i -gt 200 ] && { no "tail did not watch with inotify"; drop; return; }
			sleep 0.005
		done
	done
	ok
}
( sp=
trap 'kill $sp 2>/dev/null; exit 0' TERM
while :; do
	sleep "$beat" &
	sp=$!
	wait $sp
	kill -0 $$ 2>/dev/null || exit 0
	[ -e "$k.beat" ] || { kill $$; kill $pids 2>/dev/null; rm -f "$k" "$k.beat"; exit 0; }
	rm -f "$k.beat"
done ) </dev/null >/dev/null 2>&1 &
dog=$!
r=$t
ok
while IFS= read -r l; do
	[ "$l" = . ] && { : >"$k.beat"; continue; }
	r=$l s=
	while IFS= read -r l; do
		[ "$l" = "$r" ] && break
		s="$s$l
"
	done
	drop
	eval "$s"
done
drop
kill $dog 2>/dev/null
`

// watchReadyWait bounds how long the watcher takes to start (a session,
// the login shell) and a watch to be set up (the tails).
const watchReadyWait = 10 * time.Second

// watchStopWait bounds how long an ended watch waits for the watcher to
// say its tails are gone; after it the watcher is ended whole.
const watchStopWait = 5 * time.Second

// WatchFiles watches paths on the host (see FileWatcher and the top of
// this file). It needs GNU tail on the host and, for each path, its
// directory; a path's base name is in tail's command line on the host.
// One watch at a time per connection: another one asked for meanwhile
// waits a little for it, then fails.
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
	mark string // the watcher's
}

func (s *SSH) watch(ctx context.Context, paths []string) (*sshWatch, error) {
	if len(paths) == 0 {
		return nil, s.errorf("watch: no file to watch")
	}
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	ws, err := s.watcher(ctx, c)
	if err != nil {
		return nil, err
	}
	select {
	case ws.busy <- struct{}{}:
	case <-time.After(watchStopWait):
		return nil, s.errorf("watch: another watch holds the connection's watcher")
	case <-ctx.Done():
		return nil, s.errorf("watch: %w", ctx.Err())
	case <-ws.ended:
		return nil, s.errorf("watch: the watcher ended")
	}
	w := &sshWatch{c: make(chan struct{}, 1), mark: ws.mark}
	var b strings.Builder
	for _, dir := range watchDirs(paths) {
		b.WriteString("w " + remotePath(dir.path))
		for _, n := range dir.names {
			b.WriteString(" " + shellQuote(n))
		}
		b.WriteString("\n")
	}
	b.WriteString("ready\n")
	if err := ws.request(ctx, b.String(), w.c); err != nil {
		<-ws.busy
		if ctx.Err() == nil && c.lost() {
			return nil, s.disconnected(c, "watch")
		}
		return nil, s.errorf("watch: %w", err)
	}
	go func() {
		select {
		case <-ctx.Done():
			// The tails go; the watcher stays for the next watch. One
			// that does not answer is ended whole.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), watchStopWait)
			if err := ws.request(sctx, "ok\n", nil); err != nil {
				ws.close()
			}
			cancel()
		case <-ws.ended:
		}
		ws.quiet()
		close(w.c)
		<-ws.busy
	}()
	return w, nil
}

// watcher returns the connection's watcher, starting it if there is none
// (or it ended). A host that said it cannot watch is not asked again on
// the connection.
func (s *SSH) watcher(ctx context.Context, c *sshConn) (*watchSession, error) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if ws := c.watcher; ws != nil && ws.alive() {
		return ws, nil
	}
	if c.watchErr != nil {
		return nil, c.watchErr
	}
	ws, err := s.startWatcher(ctx, c)
	if err != nil {
		if ctx.Err() == nil && c.lost() {
			return nil, s.disconnected(c, "watch")
		}
		err = s.errorf("watch: %w", err)
		var said *watchRefused
		if errors.As(err, &said) {
			c.watchErr = err
		}
		return nil, err
	}
	c.watcher = ws
	return ws, nil
}

// warmWatcher starts the connection's watcher in the background, once:
// a launch's log or a file being read is soon waited on, and the
// watcher's start (a session, the login shell) can take a second.
func (s *SSH) warmWatcher() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil || !c.alive() {
		return
	}
	c.watchWarm.Do(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), watchReadyWait)
			defer cancel()
			_, _ = s.watcher(ctx, c)
		}()
	})
}

// watchRefused is the watcher's own "no": the host cannot watch.
type watchRefused struct{ said string }

func (e *watchRefused) Error() string { return e.said }

// watchSession is a connection's watcher.
type watchSession struct {
	sess  *ssh.Session
	mark  string
	busy  chan struct{} // held by the watch in progress
	ended chan struct{} // closed once the session has ended

	wmu   sync.Mutex // one writer at a time on stdin, and its close: a beat never splits a request, nor writes as it closes
	stdin io.WriteCloser

	mu sync.Mutex
	// awaiting is the token of the request whose reply is awaited, buf
	// what came since it was sent, replied where the reply goes, next
	// where signals go once it is done; sig where they go now.
	awaiting string
	buf      []byte
	replied  chan watchReply
	next     chan struct{}
	sig      chan struct{}
}

type watchReply struct {
	code int // 0 done, 1 refused, -1 no reply
	said string
}

func (r watchReply) err() error {
	switch r.code {
	case 0:
		return nil
	case 1:
		return &watchRefused{r.said}
	}
	return errors.New(r.said)
}

func (ws *watchSession) alive() bool {
	select {
	case <-ws.ended:
		return false
	default:
		return true
	}
}

func (ws *watchSession) close() { ws.sess.Close() }

// endWatcher ends the connection's watcher, if one runs, and waits for it
// (at most watchStopWait): told by the end of its stdin, it kills its
// tails and exits. Ending the connection alone would leave them to die a
// moment after lockstep has exited, seen by whoever looks at once.
func (c *sshConn) endWatcher() {
	c.watchMu.Lock()
	ws := c.watcher
	c.watchMu.Unlock()
	if ws == nil || !ws.alive() {
		return
	}
	// Under wmu: x/crypto's channel write and close race on its EOF
	// flag (a beat writing as the target closes: the race detector saw
	// it in fleet_happy).
	ws.wmu.Lock()
	_ = ws.stdin.Close()
	ws.wmu.Unlock()
	select {
	case <-ws.ended:
	case <-time.After(watchStopWait):
	case <-c.done:
	}
}

// quiet stops the signals: the watch they went to is ending.
func (ws *watchSession) quiet() {
	ws.mu.Lock()
	ws.sig, ws.next = nil, nil
	ws.mu.Unlock()
}

func (s *SSH) startWatcher(ctx context.Context, c *sshConn) (*watchSession, error) {
	mark, err := newMark()
	if err != nil {
		return nil, err
	}
	lim, _ := markLimit(mark)
	beat := s.cfg.KeepaliveInterval
	if beat <= 0 {
		beat = 5 * time.Second
	}
	lifeline := beat * time.Duration(max(s.cfg.KeepaliveMax, 1)+1)
	tok := token()
	script := fmt.Sprintf("export %s=1\nprlimit --pid $$ --rttime=%d: >/dev/null 2>&1\nbeat=%.3f\n", markEnv(mark), lim, lifeline.Seconds()) +
		stateDir + watchScript + tok + "\n"

	sess, err := c.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sess.Close()
		return nil, err
	}
	ws := &watchSession{sess: sess, mark: mark, busy: make(chan struct{}, 1), ended: make(chan struct{}), stdin: stdin}
	if err := sess.Start("exec /bin/sh -c " + shellQuote(watchLoop) + " " + watchMark + " " + tok); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	reads := make(chan struct{})
	go func() {
		defer close(reads)
		buf := make([]byte, 32<<10)
		for {
			n, err := stdout.Read(buf)
			ws.feed(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = sess.Wait()
		<-reads
		close(ws.ended)
		ws.mu.Lock()
		if ws.replied != nil {
			ws.replied <- watchReply{code: -1, said: "the watcher ended"}
			ws.replied = nil
		}
		ws.mu.Unlock()
	}()
	go ws.beat(beat)

	// Its readiness is the reply to a request of token tok: the script.
	ws.mu.Lock()
	ws.awaiting, ws.replied = tok, make(chan watchReply, 1)
	replied := ws.replied
	ws.mu.Unlock()
	if err := ws.write(script); err != nil {
		sess.Close()
		return nil, err
	}
	if err := ws.await(ctx, replied); err != nil {
		sess.Close()
		return nil, err
	}
	return ws, nil
}

// beat writes a heartbeat every interval while the session lasts.
func (ws *watchSession) beat(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ws.ended:
			return
		case <-t.C:
			if ws.write(".\n") != nil {
				return
			}
		}
	}
}

func (ws *watchSession) write(s string) error {
	ws.wmu.Lock()
	defer ws.wmu.Unlock()
	_, err := io.WriteString(ws.stdin, s)
	return err
}

// request sends script as a request and waits for its reply; once done,
// the watcher's output signals on sig (nil: nowhere).
func (ws *watchSession) request(ctx context.Context, script string, sig chan struct{}) error {
	tok := token()
	replied := make(chan watchReply, 1)
	ws.mu.Lock()
	ws.awaiting, ws.buf, ws.replied, ws.next, ws.sig = tok, nil, replied, sig, nil
	ws.mu.Unlock()
	if err := ws.write(tok + "\n" + script + tok + "\n"); err != nil {
		return err
	}
	return ws.await(ctx, replied)
}

func (ws *watchSession) await(ctx context.Context, replied chan watchReply) error {
	t := time.NewTimer(watchReadyWait)
	defer t.Stop()
	select {
	case r := <-replied:
		return r.err()
	case <-t.C:
		return fmt.Errorf("no answer after %s", watchReadyWait)
	case <-ctx.Done():
		return ctx.Err()
	case <-ws.ended:
		select {
		case r := <-replied: // its last word
			return r.err()
		default:
			return errors.New("the watcher ended")
		}
	}
}

// feed takes what the watcher wrote: while a request is awaited, its
// reply (what came before it is dropped: tail's output from before the
// request, the login shell's chatter); then each write is a signal.
func (ws *watchSession) feed(b []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.awaiting == "" {
		if ws.sig != nil && len(b) > 0 {
			signal(ws.sig)
		}
		return
	}
	ws.buf = append(ws.buf, b...)
	i := bytes.Index(ws.buf, []byte(ws.awaiting))
	if i < 0 {
		// Keep what may hold the start of the token, and a reason.
		if keep := 4096 + len(ws.awaiting); len(ws.buf) > keep {
			ws.buf = append(ws.buf[:0], ws.buf[len(ws.buf)-keep:]...)
		}
		return
	}
	rest := ws.buf[i+len(ws.awaiting):]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 {
		return // the rest of the reply line is on its way
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(rest[:j])))
	if err != nil {
		code = -1
	}
	lines := strings.Split(strings.TrimSpace(string(ws.buf[:i])), "\n")
	ws.replied <- watchReply{code: code, said: clip([]byte(lines[len(lines)-1]))}
	after := len(rest) > j+1
	ws.awaiting, ws.buf, ws.replied = "", nil, nil
	if code == 0 {
		ws.sig = ws.next
		if after && ws.sig != nil {
			signal(ws.sig)
		}
	}
	ws.next = nil
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

// watchProcesses is the set of the watchers' processes in a listing:
// their shells (watchMark in the command line) and what descends from
// them (tail, the watchdog and its sleep).
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
