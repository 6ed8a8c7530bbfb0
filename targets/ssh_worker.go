package targets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Workers: lockstep's own remote scripts (Inspect, ReadAt, Stat, Stop,
// Processes, Listeners, Start, MoveAside) run in a few long-lived sh
// processes, one per session, that read scripts from stdin. sshd starts
// every session under the user's login shell, and bash run by sshd reads
// ~/.bashrc even for `bash -c`: measured here, a pyenv-initialising
// .bashrc made every fresh session cost 200-500 ms. A worker pays that
// once; each call then costs one write and one read on an open session.
//
// The user's own commands (Run) still get a session each: their
// semantics (a background job holding the session open, a signal seen as
// such) are OpenSSH's, and a stray background writer can never mix its
// output into a later call.

// maxWorkers and maxRunSessions, with the connection's one watcher
// session (ssh_watch.go), stay under OpenSSH's default MaxSessions of 10
// per connection, with room for killGroup's session.
const (
	maxWorkers     = 4
	maxRunSessions = 4
)

// workerLoop reads a token line, the script's lines up to the token
// again, runs the script in a subshell (stdin /dev/null; a fork, no exec:
// cheaper than a new sh), then writes the token and the exit status on
// stdout and the token on stderr: the frames' ends. The token is random
// per call, so no output can forge it. The script is never in an argv (a
// subshell has its worker's, this text): a Start script holds the
// environment of the command it launches, and a command line is public
// on the host (ps). In the subshell $$ is the worker's pid; the
// subshell's own is in /proc/self.
// $0 is the worker's own token, written once on each stream when it is
// ready, after whatever the login shell printed.
const workerLoop = `t=$0
printf '%s %s\n' "$t" "$$"
printf '%s\n' "$t" >&2
while IFS= read -r b; do
	s=
	while IFS= read -r l; do
		[ "$l" = "$b" ] && break
		s="$s$l
"
	done
	( eval "$s" ) </dev/null # lockstep-call
	c=$?
	printf '%s %s\n' "$b" "$c"
	printf '%s\n' "$b" >&2
done
`

// workerMark is in every worker's command line, so Processes can leave
// lockstep's own processes out.
const workerMark = "lockstep-call"

type worker struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bufio.Reader
	pid    int // the worker's shell; sshd made it a process group leader
	ended  chan struct{}
}

func (w *worker) alive() bool {
	select {
	case <-w.ended:
		return false
	default:
		return true
	}
}

// workerPool holds a connection's workers: slots counts the live ones,
// idle holds those free.
type workerPool struct {
	slots chan struct{}
	idle  chan *worker
}

func newWorkerPool() *workerPool {
	return &workerPool{slots: make(chan struct{}, maxWorkers), idle: make(chan *worker, maxWorkers)}
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "lockstep-" + hex.EncodeToString(b)
}

// get returns a free worker, starting one if there are fewer than
// maxWorkers, else waiting for one.
func (c *sshConn) getWorker(ctx context.Context) (*worker, error) {
	for {
		w, err := c.takeWorker(ctx)
		if err != nil || w.alive() {
			return w, err
		}
		// It ended while idle (killed on the host): replace it.
		c.dropWorker(w, false)
	}
}

func (c *sshConn) takeWorker(ctx context.Context) (*worker, error) {
	select {
	case w := <-c.workers.idle:
		return w, nil
	default:
	}
	select {
	case w := <-c.workers.idle:
		return w, nil
	case c.workers.slots <- struct{}{}:
		w, err := c.startWorker(ctx)
		if err != nil {
			<-c.workers.slots
			return nil, err
		}
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, errConnEnded
	}
}

var errConnEnded = errors.New("connection ended")

func (c *sshConn) putWorker(w *worker) { c.workers.idle <- w }

// dropWorker ends a worker that can no longer be trusted (cancelled
// mid-call, or broken) and frees its slot.
func (c *sshConn) dropWorker(w *worker, kill bool) {
	w.sess.Close()
	if kill && w.pid > 1 {
		c.kills.Go(func() { killGroup(c, w.pid) })
	}
	<-c.workers.slots
}

func (c *sshConn) startWorker(ctx context.Context) (*worker, error) {
	sess, err := c.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	w := &worker{sess: sess, ended: make(chan struct{})}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sess.Close()
		return nil, err
	}
	w.stdin, w.stdout, w.stderr = stdin, bufio.NewReader(stdout), bufio.NewReader(stderr)
	tok := token()
	if err := sess.Start("exec /bin/sh -c " + shellQuote(workerLoop) + " " + tok); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	go func() { _ = sess.Wait(); close(w.ended) }()
	ready := make(chan error, 2)
	go func() {
		_, pid, err := readFrame(w.stdout, tok, true)
		w.pid = pid
		ready <- err
	}()
	go func() {
		said, _, err := readFrame(w.stderr, tok, false)
		if err != nil && len(bytes.TrimSpace(said)) > 0 {
			err = fmt.Errorf("%w; the host said: %s", err, clip(bytes.TrimSpace(said)))
		}
		ready <- err
	}()
	// Both streams, even after a failure: stderr holds the explanation.
	var errs []error
	for range 2 {
		select {
		case err := <-ready:
			errs = append(errs, err)
		case <-ctx.Done():
			c.releaseWorker(w)
			return nil, ctx.Err()
		case <-c.done:
			sess.Close()
			return nil, errConnEnded
		}
	}
	if err := errors.Join(errs...); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	c.commandsRan()
	return w, nil
}

// releaseWorker ends a worker whose start was given up (its call was
// cancelled) without killing it: the end of its stdin makes the shell
// leave its loop, whether it runs yet or sshd's login shell is still
// reading its rc files, and the session is closed once sshd reports the
// shell's exit (or after watchStopWait). Closing the session at once
// would leave the shell to notice a moment later, after lockstep may
// have exited: the target's Close waits for this as for kills.
func (c *sshConn) releaseWorker(w *worker) {
	w.stdin.Close()
	c.kills.Go(func() {
		defer w.sess.Close()
		select {
		case <-w.ended:
		case <-c.done:
		case <-time.After(watchStopWait):
		}
	})
}

type frame struct {
	data []byte
	code int
	err  error
}

// run sends script to w and reads its output and exit status. On any
// error the worker is not reusable; the caller drops it.
func (w *worker) run(ctx context.Context, c *sshConn, script string) (stdout, stderr []byte, code int, err error) {
	tok := token()
	outc, errc := make(chan frame, 1), make(chan frame, 1)
	go func() {
		data, code, err := readFrame(w.stdout, tok, true)
		outc <- frame{data, code, err}
	}()
	go func() {
		data, _, err := readFrame(w.stderr, tok, false)
		errc <- frame{data: data, err: err}
	}()
	// A write can block on a full window; the readers already run, and
	// a dead connection fails it.
	if _, err := io.WriteString(w.stdin, tok+"\n"+script+"\n"+tok+"\n"); err != nil {
		return nil, nil, 0, err
	}
	var out, errf frame
	for got := 0; got < 2; {
		select {
		case out = <-outc:
			got++
		case errf = <-errc:
			got++
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		case <-c.done:
			return nil, nil, 0, errConnEnded
		}
	}
	if out.err != nil || errf.err != nil {
		return nil, nil, 0, errors.Join(out.err, errf.err)
	}
	return out.data, errf.data, out.code, nil
}

// readFrame reads r up to the line ending with tok (and, withCode, a
// space and a number, returned as code): what comes before is the data.
func readFrame(r *bufio.Reader, tok string, withCode bool) (data []byte, code int, err error) {
	var buf []byte
	lineStart := 0
	t := []byte(tok)
	for {
		seg, err := r.ReadSlice('\n')
		buf = append(buf, seg...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			// What came before the end explains it, often: the login
			// shell's "This account is currently not available."
			return buf, 0, err
		}
		line := buf[lineStart:]
		if i := bytes.LastIndex(line, t); i >= 0 {
			rest := string(line[i+len(t):])
			if !withCode && rest == "\n" {
				return buf[:lineStart+i], 0, nil
			}
			if num, ok := strings.CutPrefix(strings.TrimSuffix(rest, "\n"), " "); withCode && ok {
				if n, err := strconv.Atoi(num); err == nil {
					return buf[:lineStart+i], n, nil
				}
			}
		}
		lineStart = len(buf)
	}
}

// script runs one of lockstep's scripts on a worker and returns its
// stdout; a non-zero exit is an error carrying its stderr.
func (s *SSH) script(ctx context.Context, what, script string) ([]byte, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.getWorker(ctx)
	if err != nil {
		if errors.Is(err, errConnEnded) || c.lost() {
			return nil, s.disconnected(c, what)
		}
		if ctx.Err() != nil {
			return nil, s.errorf("%s: %w", what, ctx.Err())
		}
		return nil, s.errorf("%s: %w", what, err)
	}
	out, errb, code, err := w.run(ctx, c, script)
	if err != nil {
		// The worker may be mid-script: end it and its children.
		c.dropWorker(w, true)
		switch {
		case errors.Is(err, errConnEnded) || c.lost():
			return nil, s.disconnected(c, what)
		case ctx.Err() != nil:
			return nil, s.errorf("%s: %w", what, ctx.Err())
		}
		return nil, s.errorf("%s: worker: %w", what, err)
	}
	c.putWorker(w)
	if code != 0 {
		msg := string(bytes.TrimSpace(errb))
		if msg == "" {
			msg = "no message"
		}
		return out, s.errorf("%s: remote script exited %d: %s", what, code, msg)
	}
	return out, nil
}

// endWorkers ends the idle workers as the target closes: each reads the
// end of its stdin and exits; endWorkers waits for that, up to wait in
// all, so that no worker shell is left on the host once lockstep is done
// (the connection's end alone would leave each to notice a moment later).
func (c *sshConn) endWorkers(wait time.Duration) {
	var ws []*worker
	for {
		select {
		case w := <-c.workers.idle:
			ws = append(ws, w)
			continue
		default:
		}
		break
	}
	for _, w := range ws {
		w.stdin.Close()
	}
	deadline := time.After(wait)
	for _, w := range ws {
		select {
		case <-w.ended:
		case <-deadline:
			return
		}
	}
}
