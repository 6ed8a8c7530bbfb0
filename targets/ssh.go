package targets

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// SSH is a host reached over SSH (golang.org/x/crypto/ssh). It holds one
// connection, opened on first use and shared by every call; when the
// connection drops, calls fail with errors wrapping ErrDisconnected and the
// next call reconnects (with backoff, within its context).
//
// Run gives each command a session of its own, run as
// `exec /bin/sh -c '...'` (sshd starts every session under the user's
// login shell; exec leaves it at once, so the command runs under POSIX sh
// whatever that shell is). Everything else (Inspect, ReadAt, Stat, Stop,
// Start, MoveAside, Processes, Listeners) is a short sh script sent to one
// of a few long-lived worker shells on the connection (see ssh_worker.go):
// a fresh session pays the login shell's startup, ~/.bashrc included,
// and a worker pays it once. Environment variables are exported by the
// script, since sshd refuses most "env" requests, and every script
// reaches its shell on a stdin or a pipe, never in a command line: on the
// host, ps shows only lockstep's constant text and, for a launch, the
// command as the plan wrote it; env values never.
type SSH struct {
	name     string
	cfg      SSHConfig
	resolver resolver
	// runSessions bounds Run's sessions open at once: OpenSSH refuses
	// more than MaxSessions (default 10) on one connection, workers
	// included.
	runSessions chan struct{}
	// noByteDD is set once the host's dd is found not to count bytes
	// (readBytes).
	noByteDD atomic.Bool

	mu      sync.Mutex
	conn    *sshConn
	dialing chan struct{} // closed when the dial in progress ends
	closed  bool
	backoff time.Duration
}

var _ Target = (*SSH)(nil)

// NewSSH returns the SSH target name for cfg (usually from ResolveSSH).
// It does not connect: the first call does. What cfg leaves empty takes
// OpenSSH's defaults without reading any configuration.
func NewSSH(name string, cfg SSHConfig) *SSH {
	return newSSH(name, cfg, defaultResolver())
}

func newSSH(name string, cfg SSHConfig, r resolver) *SSH {
	if cfg.Host == "" {
		cfg.Host = name
	}
	return &SSH{
		name:        name,
		cfg:         withDefaults(cfg, r),
		resolver:    r,
		runSessions: make(chan struct{}, maxRunSessions),
	}
}

// Name is the plan's name for the target.
func (s *SSH) Name() string { return s.name }

// Config is the configuration the target connects with, defaults filled.
func (s *SSH) Config() SSHConfig { return s.cfg }

// Close closes the connection. Processes started with Start keep running.
func (s *SSH) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		// A cancelled call's kill script is ended before the connection:
		// each waits at most a few seconds (killGroup).
		s.conn.kills.Wait()
		s.conn.endWatcher()
		s.conn.endWorkers(watchStopWait)
		s.conn.end(errors.New("closed by lockstep"))
	}
	return nil
}

// errClosed is a call made after Close.
var errClosed = errors.New("target closed")

// connect returns the live connection, dialing one if there is none. Only
// one dial runs at a time; concurrent callers wait for it. After a drop,
// the call that reconnects retries with backoff until ctx ends; a first
// connection is tried once, so a wrong host name fails fast.
func (s *SSH) connect(ctx context.Context) (*sshConn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("ssh %s: %w", s.name, errClosed)
		}
		if s.conn != nil && s.conn.alive() {
			c := s.conn
			s.mu.Unlock()
			return c, nil
		}
		if s.dialing != nil {
			wait := s.dialing
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, s.errorf("connect: %w", ctx.Err())
			}
		}
		dropped := s.conn // the connection that died, nil before the first
		done := make(chan struct{})
		s.dialing = done
		s.mu.Unlock()

		c, err := s.redial(ctx, dropped)

		s.mu.Lock()
		s.dialing = nil
		close(done)
		if err == nil && s.closed {
			c.end(errClosed)
			c, err = nil, fmt.Errorf("ssh %s: %w", s.name, errClosed)
		}
		if err == nil {
			s.conn = c
		}
		s.mu.Unlock()
		return c, err
	}
}

// redial dials once when there was never a connection, else until it
// succeeds, ctx ends, or the host refuses us for good (host key, auth).
func (s *SSH) redial(ctx context.Context, dropped *sshConn) (*sshConn, error) {
	if dropped == nil {
		c, err := s.dial(ctx)
		if err != nil {
			return nil, s.errorf("%w", err)
		}
		return c, nil
	}
	if s.cfg.NoReconnect {
		// A fleet's host: cut off is failed, not waited for.
		return nil, s.disconnected(dropped, "connect")
	}
	for {
		c, err := s.dial(ctx)
		if err == nil {
			s.mu.Lock()
			s.backoff = 0
			s.mu.Unlock()
			return c, nil
		}
		var hk *HostKeyError
		var auth *AuthError
		if errors.As(err, &hk) || errors.As(err, &auth) || ctx.Err() != nil {
			return nil, s.errorf("%w (%v); reconnecting: %w", ErrDisconnected, dropped.cause, err)
		}
		s.mu.Lock()
		s.backoff = min(max(2*s.backoff, 100*time.Millisecond), 5*time.Second)
		wait := s.backoff
		s.mu.Unlock()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, s.errorf("%w (%v); reconnecting: %w", ErrDisconnected, dropped.cause, err)
		}
	}
}

func (s *SSH) errorf(format string, args ...any) error {
	return fmt.Errorf("ssh %s (%s): "+format, append([]any{s.name, sshAddr(s.cfg)}, args...)...)
}

// disconnected is the error of a call whose connection died under it.
func (s *SSH) disconnected(c *sshConn, what string) error {
	return s.errorf("%s: %w: %v", what, ErrDisconnected, c.cause)
}

// runWaitDelay is how long Run waits, once the command has exited, for
// what it left in the background to close the output it inherited (as
// the local target does): OpenSSH would hold the session open until then.
const runWaitDelay = 2 * time.Second

// runMaxOutput bounds what Run keeps of each of stdout and stderr, as the
// local target does; the rest is read and dropped.
const runMaxOutput = 64 << 20

// exec runs script with /bin/sh on the host in a session of its own, its
// output to stdout and stderr, and returns its exit status. ctx ending
// ends the command's process group (TERM, then KILL), then calls onCancel
// (if not nil) to end what left the group: sshd keeps the session open,
// and exec waits, while any process holds its output. stdout and stderr
// are no longer written to once exec returns.
//
// It drives the session channel itself rather than through ssh.Session,
// whose Wait returns only when the channel closes: the exit status comes
// first, and a background job holding the output must not hold the call.
func (s *SSH) exec(ctx context.Context, what, script string, stdout, stderr io.Writer, onCancel func()) (code int, signal string, err error) {
	select {
	case s.runSessions <- struct{}{}:
		defer func() { <-s.runSessions }()
	case <-ctx.Done():
		return 0, "", s.errorf("%s: %w", what, ctx.Err())
	}
	c, err := s.connect(ctx)
	if err != nil {
		return 0, "", err
	}
	ch, reqs, err := c.client.OpenChannel("session", nil)
	if err != nil {
		if c.lost() {
			return 0, "", s.disconnected(c, what)
		}
		return 0, "", s.errorf("%s: open session: %w", what, err)
	}
	defer ch.Close()

	statusc := make(chan exitStatus, 1)
	reqsDone := make(chan struct{})
	go func() {
		defer close(reqsDone)
		for req := range reqs {
			if st, ok := parseExit(req); ok {
				select {
				case statusc <- st:
				default:
				}
			}
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}()
	// The script's shell is the session's process group leader (sshd
	// runs it under setsid); it says its pid first, on stderr, so that a
	// cancelled call can end its whole group. sshd's own "signal" request
	// cannot: it refuses it for root logins.
	group := &pidWriter{w: stderr, got: make(chan struct{})}
	copied := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(stdout, ch); copied <- struct{}{} }()
	go func() { _, _ = io.Copy(group, ch.Stderr()); copied <- struct{}{} }()
	waitCopies := func() {
		for range 2 {
			<-copied
		}
	}

	// The script travels on the session's stdin, never in the command
	// line: it holds the environment's values (and whatever the plan
	// wrote into the command), and a command line is public on the host
	// (ps). The shell reads it to its end, then runs it with eval: its
	// own argv is this constant text, and the command's stdin is at its
	// end, as it would be with nothing sent.
	cmd := "exec /bin/sh -c " + shellQuote("echo "+pgidMark+"$$ >&2\n"+stdinScript)
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{cmd}))
	if err != nil || !ok {
		ch.Close()
		waitCopies()
		if c.lost() {
			return 0, "", s.disconnected(c, what)
		}
		if err == nil {
			err = errors.New("the server refused to run a command")
		}
		return 0, "", s.errorf("%s: %w", what, err)
	}
	// sshd turned Nagle off on the connection before it ran the command
	// (as for a worker): a Dial after this needs no worker for it, which
	// would cost each host of a fleet a session of its own.
	c.commandsRan()
	go func() {
		// A write waits for the host to read; a closed channel ends it.
		_, _ = io.WriteString(ch, script+"\n"+scriptEnd+"\n")
		_ = ch.CloseWrite()
	}()

	var st exitStatus
	select {
	case st = <-statusc:
	case <-reqsDone:
		// Closed: the status, if any, came just before.
		select {
		case st = <-statusc:
		default:
			ch.Close()
			waitCopies()
			if c.lost() {
				return 0, "", s.disconnected(c, what)
			}
			return 0, "", s.errorf("%s: the session ended without an exit status", what)
		}
	case <-ctx.Done():
		// The pid is the shell's first line, which may still be on its
		// way when the call is cut at once, or not yet written while
		// sshd's login shell reads its rc files: the session stays open
		// until it comes (the script is on its way, and would run after
		// lockstep had given up on it, its group never ended).
		if pgid := group.wait(pgidWait, reqsDone, c.done); pgid > 1 {
			killGroup(c, int(pgid))
		}
		ch.Close()
		if onCancel != nil {
			onCancel()
		}
		waitCopies()
		return 0, "", s.errorf("%s: %w", what, ctx.Err())
	case <-c.done:
		waitCopies()
		return 0, "", s.disconnected(c, what)
	}

	delay := time.NewTimer(runWaitDelay)
	defer delay.Stop()
	for n := 0; n < 2; {
		select {
		case <-copied:
			n++
		case <-delay.C:
			ch.Close() // the copies end at once
		}
	}
	group.flush()
	return st.code, st.signal, nil
}

// exitStatus is how a session's command ended, as sshd reports it.
type exitStatus struct {
	code   int    // -1 when a signal ended it
	signal string // "SIGKILL"
}

// parseExit reads an "exit-status" or "exit-signal" request (RFC 4254
// 6.10).
func parseExit(req *ssh.Request) (exitStatus, bool) {
	switch req.Type {
	case "exit-status":
		var m struct{ Status uint32 }
		if ssh.Unmarshal(req.Payload, &m) == nil {
			return exitStatus{code: int(m.Status)}, true
		}
	case "exit-signal":
		var m struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}
		if ssh.Unmarshal(req.Payload, &m) == nil {
			return exitStatus{code: -1, signal: "SIG" + m.Signal}, true
		}
	}
	return exitStatus{}, false
}

// killGroup ends the process group of a cancelled call: TERM, then KILL
// a second later if anything is left. It bypasses the session limit (the
// cancelled call still holds its slot) and waits at most a few seconds.
func killGroup(c *sshConn, pgid int) {
	sess, err := c.client.NewSession()
	if err != nil {
		return
	}
	defer sess.Close()
	done := make(chan struct{})
	go func() {
		_ = sess.Run(fmt.Sprintf("exec /bin/sh -c %s", shellQuote(fmt.Sprintf(`g=%d
kill -s TERM -- -$g 2>/dev/null || exit 0
i=0
while kill -s 0 -- -$g 2>/dev/null; do
	i=$((i+1)); [ $i -gt 20 ] && { kill -s KILL -- -$g 2>/dev/null; exit 0; }
	sleep 0.05
done
`, pgid))))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// stdinScript reads a script from stdin to its end and runs it in the
// shell that reads it, so that the script is in no process's argv. The
// dot keeps the script's trailing newlines, which $(...) would drop.
// The script comes followed by scriptEnd's line: stdin ends early when
// the connection drops mid-write (sshd closes the pipe), and a script
// cut short is never run (its first lines alone could do anything). The
// variables are unset before the script runs, in the same eval.
const stdinScript = `lockstep_script=$(cat; echo .)
lockstep_body=${lockstep_script%"
` + scriptEnd + `
."}
if [ "$lockstep_body" = "$lockstep_script" ]; then
	echo "lockstep: the command's script came cut short (the connection dropped?): not run" >&2
	exit 125
fi
eval "unset lockstep_script lockstep_body
${lockstep_body}"
`

// scriptEnd is the line written after a script stdinScript reads.
const scriptEnd = "lockstep-script-end"

// pgidMark starts the line a Run's shell writes first on stderr: its pid,
// which is its session's process group.
const pgidMark = "lockstep-pgid:"

// pidWriter passes stderr on, minus the pgidMark line, whose pid it keeps.
// Lines before it (a login shell's startup chatter) pass unchanged.
type pidWriter struct {
	w       io.Writer
	pending []byte // an incomplete line, while the mark is still awaited
	seen    int    // bytes looked at; past 64 KiB the mark is given up
	done    bool
	pid     atomic.Int64
	got     chan struct{} // closed once the mark is seen or given up; nil: not awaited
}

// pgidWait bounds how long a cancelled call waits for its shell's pid.
const pgidWait = 5 * time.Second

// wait returns the pid once the mark line has come, or 0 after d or once
// the session or its connection has ended (gone) without it.
func (p *pidWriter) wait(d time.Duration, gone, lost <-chan struct{}) int64 {
	if p.got != nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.got:
		case <-gone:
		case <-lost:
		case <-t.C:
		}
	}
	return p.pid.Load()
}

// seenMark ends the wait for the mark.
func (p *pidWriter) seenMark() {
	p.done = true
	if p.got != nil {
		close(p.got)
	}
}

// flush passes on an incomplete last line held while the mark was awaited.
func (p *pidWriter) flush() {
	if len(p.pending) > 0 {
		_, _ = p.w.Write(p.pending)
		p.pending = nil
	}
}

func (p *pidWriter) Write(b []byte) (int, error) {
	n := len(b)
	for !p.done && len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.pending = append(p.pending, b...)
			p.seen += len(b)
			if p.seen > 64<<10 {
				p.seenMark()
				b, p.pending = p.pending, nil
				break
			}
			return n, nil
		}
		line := append(p.pending, b[:i+1]...)
		p.pending = nil
		p.seen += i + 1
		b = b[i+1:]
		if v, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte(pgidMark)); ok {
			if pid, err := strconv.Atoi(string(v)); err == nil {
				p.pid.Store(int64(pid))
				p.seenMark()
				continue
			}
		}
		if _, err := p.w.Write(line); err != nil {
			return n, err
		}
	}
	if len(b) > 0 {
		if _, err := p.w.Write(b); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Run runs c.Line with /bin/sh -c on the host, in a session of its own
// (sshd's), marked as Start marks a launch: the variable in its
// environment, and the shell sets its own mark limit (prlimit) before the
// command runs, so Members finds what it left running (without prlimit,
// the variable, the session and descent remain). If the connection drops
// meanwhile the call fails with ErrDisconnected, and the command may go
// on running on the host (sshd does not signal it); if ctx ends, the
// command's process group is sent TERM, then KILL, and then every process
// carrying the mark is killed (Stop). Either way the Result holds what
// the command printed until then. Once the command has exited, Run waits
// at most 2s for processes it left in the background to close its
// output, and keeps at most 64 MiB of each stream.
func (s *SSH) Run(ctx context.Context, c Command) (Result, error) {
	mark, err := newMark()
	if err != nil {
		return Result{}, s.errorf("run: %w", err)
	}
	lim, _ := markLimit(mark)
	env := map[string]string{markEnv(mark): "1"}
	maps.Copy(env, c.Env)
	c.Env = env
	pre, err := s.prelude(c)
	if err != nil {
		return Result{}, err
	}
	out, errb := &cappedBuffer{limit: runMaxOutput}, &cappedBuffer{limit: runMaxOutput}
	start := time.Now()
	var stopErr error
	stopMarked := func() {
		// The group is ended; what left it carries the mark.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sshOrphanStop)
		defer cancel()
		stopErr = s.Stop(sctx, Process{Mark: mark}, 0)
	}
	tok := token()
	look := fmt.Sprintf(runLookScript, tok, lim, mark)
	code, sig, err := s.exec(ctx, "run", pre+fmt.Sprintf(runMarkLine, lim)+look+c.Line, out, errb, stopMarked)
	res := Result{ExitCode: code, Signal: sig, Duration: time.Since(start), Mark: mark}
	var said string
	res.Stdout, said = cutVerdict(out.b, tok)
	if said == "" {
		res.Stderr, said = cutVerdict(errb.b, tok)
	} else {
		res.Stderr, _ = cutVerdict(errb.b, tok)
	}
	res.LeftNothing = said == "none"
	if err != nil {
		// What the command printed before the end is kept.
		res.ExitCode = -1
		if stopErr != nil {
			err = fmt.Errorf("%w; and stopping what it started: %w", err, stopErr)
		}
		return res, err
	}
	return res, nil
}

// runMarkLine is how a Run's shell marks itself before the command, as a
// launch's does: the soft RLIMIT_RTTIME limit, which every process it
// starts inherits.
const runMarkLine = "prlimit --pid $$ --rttime=%d: >/dev/null 2>&1\n"

// runLookScript is a Run's look for what its command left, made by the
// command's own shell as it exits (an EXIT trap), so that the answer rides
// on the session's end rather than costing a round trip after it; and it
// reads the limits and environment of the processes started since the
// shell only, not of every process on the host (a grep of those was as
// costly as a session under load).
//
// Every process carrying the mark descends from the shell, so its pid was
// allocated after the shell's: pids are handed out cyclically, from the
// last one up to pid_max, then from 300 (RESERVED_PIDS) again, skipping
// those in use. The window is (shell's pid, last pid] (/proc/loadavg's
// last field, of the reader's pid namespace), wrapped around pid_max when
// the last pid is below the shell's. The window misses a process only if
// the allocation went a whole lap round since the shell: that takes
// pid_max - 300 allocations, counting the pids it skipped for being in
// use; so the look trusts the window only while the forks since the shell
// (/proc/stat's "processes", every fork and thread on the host, so an
// over-count in a container) plus the threads alive at the shell's start
// (/proc/loadavg) stay 1000 short of that. pid_max is first taken as the
// highest pid seen (a lower bound), and read with cat only when that is
// not enough: sh's read cannot read a sysctl file, which answers a read
// past its first byte with nothing. Otherwise, and whenever the look
// cannot finish (no grep, stderr redirected away from lockstep's, a
// command that exec'ed or replaced the trap), it says nothing and the
// caller looks with Members.
//
// A round reads the last pid, then tries each pid of its range in turn
// (the whole of /proc, filtered, when the range wraps), and greps the
// limits and environment of those there. A marked process made after
// that read has a marked parent that was alive when the round came to
// its pid. grep prints the marks it finds, and the first word of each
// limits file it read ("Limit": a process gone before grep opened it, or
// mid-read, has none), so the look knows which it read alive: when it
// read them all, any marked parent was seen with its mark. When one went
// before grep read it (it may have forked a child since: a background
// job daemonizing as the command ends), the look goes round again over
// the window (a process being made may hold a pid its /proc directory
// does not show yet) for what it has not read, five rounds at most. (A process that lost its
// limit mark, carrying only the variable, and that goes between grep's
// read of its limits and of its environment is the one it can miss.)
// On a busy host processes of others end under every round (a fleet's
// hosts sharing one process table did in 45 of 50 looks): after the
// fifth, the look greps every process's limits and environment, as
// Members would, the list of files made before grep starts (so that
// grep's own, marked, is not in it), and says what it found, rather
// than leave the caller a round trip and a worker's session for it.
// The look forks nothing when no process started since the shell, and
// runs one grep of a few files when some did. The verdict goes to stderr
// (stdout when the command pointed stderr there) as one write, prefixed
// by a token fresh for this Run, and Run cuts it out: "none"
// (Result.LeftNothing), "some" or "unknown". The function's first
// argument is the shell's exit status, which it exits with.
const runLookScript = `lockstep_left() {
	set +efux
	IFS=' 	
'
	st=$1 s=$2 p0=$3 a0=$4 v=unknown seen=' ' i=0 m=
	case $s:$p0:$a0 in *[!0-9:]* | :* | *: | *::*) p0= ;; esac
	n=
	while read -r k x; do [ "$k" = processes ] && { n=$x; break; }; done </proc/stat
	while [ -n "$p0" ] && [ -n "$n" ] && [ $i -lt 5 ]; do
		i=$((i + 1)) why=
		read -r _ _ _ _ hi </proc/loadavg
		c= ps= top=$hi
		if [ $s -le $hi ]; then
			p=$s
			while [ $p -lt $hi ]; do
				p=$((p + 1))
				[ -d /proc/$p ] && [ $p != $$ ] || continue
				case $seen in *" $p "*) continue ;; esac
				c="$c /proc/$p/limits /proc/$p/environ" ps="$ps $p"
			done
		else
			for d in /proc/[0-9]*; do
				p=${d#/proc/}
				[ $p -gt $top ] && top=$p
				[ $p -gt $s ] || [ $p -le $hi ] || continue
				[ $p = $$ ] && continue
				case $seen in *" $p "*) continue ;; esac
				c="$c $d/limits $d/environ" ps="$ps $p"
			done
		fi
		[ $top -lt $s ] && top=$s
		if [ $((n - p0 + a0 + 1000)) -ge $((top - 300)) ]; then
			[ -n "$m" ] || m=$(command -p cat /proc/sys/kernel/pid_max)
			[ $((n - p0 + a0 + 1000)) -lt $((m - 300)) ] || break
		fi
		[ -n "$c" ] || { v=none; break; }
		f=$(command -p grep -oszE -e "Max realtime timeout +%[2]d " -e "^LOCKSTEP_LAUNCH_%[3]s=1\$" -e ^Limit $c)
		r=$?
		case $f in *"Max realtime timeout"* | *LOCKSTEP_LAUNCH_*) v=some; break ;; esac
		[ $r -le 2 ] || break
		gone=
		for p in $ps; do
			case $f in *"/proc/$p/limits:Limit"*) seen="$seen$p " ;; *) gone=1 ;; esac
		done
		[ -z "$gone" ] && { v=none; break; }
		why=gone
	done
	if [ $v = unknown ] && [ "$why" = gone ] && g=$(command -pv grep); then
		set -- /proc/[0-9]*/limits /proc/[0-9]*/environ
		f=$("$g" -lszE -e "Max realtime timeout +%[2]d " -e "^LOCKSTEP_LAUNCH_%[3]s=1\$" "$@" 2>/dev/null)
		if [ $? -le 2 ]; then
			v=none
			for p in $f; do
				case $p in /proc/$$/*) ;; *) v=some; break ;; esac
			done
		fi
	fi
	[ -p /proc/$$/fd/2 ] && printf '%%s %%s\n' %[1]s "$v" >&2
	exit "$st"
}
read -r _ _ _ lockstep_a _ </proc/loadavg
while read -r lockstep_k lockstep_p; do [ "$lockstep_k" = processes ] && break; done </proc/stat
trap "lockstep_left \$? $$ ${lockstep_p:-x} ${lockstep_a#*/}" EXIT
unset lockstep_a lockstep_k lockstep_p
`

// cutVerdict returns b without the line runLookScript wrote after tok,
// and what that line said ("" when it is not in b).
func cutVerdict(b []byte, tok string) ([]byte, string) {
	i := bytes.Index(b, []byte(tok+" "))
	if i < 0 {
		return b, ""
	}
	rest := b[i+len(tok)+1:]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 {
		return b, ""
	}
	said := string(rest[:j])
	out := append(b[:i:i], rest[j+1:]...)
	if len(out) == 0 {
		out = nil
	}
	return out, said
}

// prelude is the shell text that sets up c's directory and environment:
// exported variables (sshd refuses most SetEnv requests), the target's
// then the command's.
func (s *SSH) prelude(c Command) (string, error) {
	var b strings.Builder
	dir := c.Dir
	if dir == "" {
		dir = s.cfg.Workdir
	}
	if dir != "" {
		b.WriteString("cd " + remotePath(dir) + " || exit\n")
	}
	env := map[string]string{}
	for k, v := range s.cfg.Env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !validEnvName(k) {
			return "", s.errorf("environment variable name %q is not valid in sh (letters, digits, _; not starting with a digit)", k)
		}
		b.WriteString("export " + k + "=" + shellQuote(env[k]) + "\n")
	}
	return b.String(), nil
}

// remotePath quotes p for the remote shell, keeping a leading ~/ meaning
// the remote home.
func remotePath(p string) string {
	if p == "~" {
		return `"$HOME"`
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return `"$HOME"/` + shellQuote(rest)
	}
	return shellQuote(p)
}

func validEnvName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// shellQuote quotes s for POSIX sh: single quotes, each ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stateDir holds the exit status files of launched processes, private to
// the remote user. Not XDG_RUNTIME_DIR: systemd removes it when the
// user's last session ends, which is exactly when a launch must outlive
// its session.
const stateDir = `d=/tmp/lockstep-"${LOGNAME:-$(id -u)}"` + "\n"

// launchWrapper is the session leader of a launch. It records the
// command's exit status in $d/PGID.status for Inspect. It traps TERM, INT
// and HUP (a trap, unlike an ignored signal, is not inherited by the
// command) so that Stop's TERM to the group still lets it record how the
// command ended; sh runs a trap only after the foreground command returns.
// The log's path (its first line: a path may hold a sensitive value) and
// the inner script (the directory, the environment, then exec of the
// command) come on stdin, the script going on to the command's shell
// through a pipe: never in an argv (ps shows the wrapper's and the inner shell's
// constant text, then the command's own), nor in an environment the
// wrapper keeps for the launch's life. A process probe matching the
// command line finds the command alone, not its wrapper too.
// The log is created afresh (noclobber: O_EXCL), then opened again
// through /proc for appending, and its identity sent before the stat line.
// Only the command writes to the log: the wrapper's own stderr, where sh
// reports "Terminated", is /dev/null, so the command's shell points its
// output at the log itself (dash prints that report to the command's
// redirected stderr, were the wrapper to redirect it).
const launchWrapper = `d=$1 lim=$2
IFS= read -r log
inner=$(cat; echo .)
exec </dev/null
st="$d/$$.status"
rm -f "$st" "$st.tmp"
trap : TERM INT HUP
set -C
{ command exec 5>"$log"; } 2>/dev/null || {
	if [ -f "$log" ]; then echo exists >&3; else echo "error: cannot open the log $log for writing" >&3; fi
	exit 1
}
set +C
exec 4>>/proc/$$/fd/5 5>&-
id=
[ -f /proc/$$/fd/4 ] && id=$(stat -L -c %d:%i /proc/$$/fd/4)
printf 'logid %s\n' "$id" >&3
printf '%s' "${inner%.}" | /bin/sh -c '[ -n "$1" ] && prlimit --pid $$ --rttime="$1": >/dev/null 2>&1; set --; read -r s </proc/$$/stat; echo "$s" >&3; exec 3>&- 1>&4 2>&4 4>&-
lockstep_script=$(cat; echo .)
exec </dev/null
eval "unset s lockstep_script
${lockstep_script%.}"' lockstep-inner "$lim"
echo $? >"$st.tmp" && mv -f "$st.tmp" "$st"
`

// startScript launches the wrapper in its own session with setsid and
// reads, through a fifo, the /proc stat line the command's own shell
// writes before it execs the command: so the pid and start time are the
// command's, known even if it exits at once.
//
// Status files of launches that ended more than a week ago are removed.
const startScript = `(umask 077 && mkdir -p "$d") || exit
if [ ! -d "$d" ] || [ -L "$d" ] || [ ! -O "$d" ]; then echo "$d is not a private directory of this user" >&2; exit 90; fi
find "$d" -name '*.status' -mtime +7 -exec rm -f {} + 2>/dev/null
case $log in /*) ;; *) log="$PWD/$log" ;; esac
mkdir -p -- "$(dirname -- "$log")" || exit
f="$d/start.$$"
rm -f "$f"
mkfifo "$f" || exit
( exec 3>"$f"; printf '%s\n%s' "$log" "$inner" | exec setsid /bin/sh -c "$wrapper" lockstep-launch "$d" "$lim" >/dev/null 2>&1 ) &
exec 5<"$f"
IFS= read -r line <&5
case $line in "logid "*) logid=${line#logid }; IFS= read -r line <&5 ;; esac
exec 5<&-
rm -f "$f"
case $line in
"") echo "the launch wrapper did not start (is setsid, from util-linux, installed?)" >&2; exit 92 ;;
exists) echo exists; exit 0 ;;
error:*) echo "${line#error: }" >&2; exit 93 ;;
esac
pid=${line%% *}
printf 'stat %s\n' "$line"
printf 'logid %s\n' "$logid"
i=0
while c=$(tr '\0\n' '  ' </proc/$pid/cmdline 2>/dev/null); do
	case $c in *lockstep-inner*) ;; *) break ;; esac
	i=$((i+1)); [ $i -gt 100 ] && break
	sleep 0.005
done
printf 'cmd %s\n' "$c"
printf 'log %s\n' "$log"
`

// Start launches c.Line detached on the host: setsid (its own session and
// process group), stdin /dev/null, stdout and stderr to log, a file it
// creates (noclobber; see Target.Start) (its directory created; a relative path or ~/ is taken from the remote home,
// not c.Dir, and Process.Log is absolute). The process reported is the
// command's own; its
// group leader (PGID) is a small sh wrapper that waits for it and records
// its exit status for Inspect. The command's shell sets its mark limit
// with prlimit (util-linux, as setsid is) before it runs the command;
// without prlimit the launch is marked by its environment alone.
func (s *SSH) Start(ctx context.Context, c Command, log string) (Process, error) {
	defer s.warmWatcher() // a file followed here is soon watched
	if log == "" {
		return Process{}, s.errorf("start: no log file given")
	}
	if strings.ContainsAny(log, "\n\x00") {
		// The wrapper reads the path as a line.
		return Process{}, s.errorf("start: a log path cannot hold a newline or a NUL byte")
	}
	mark, err := newMark()
	if err != nil {
		return Process{}, s.errorf("start: %w", err)
	}
	lim, _ := markLimit(mark)
	env := map[string]string{markEnv(mark): "1"}
	maps.Copy(env, c.Env)
	c.Env = env
	pre, err := s.prelude(c)
	if err != nil {
		return Process{}, err
	}
	script := stateDir +
		fmt.Sprintf("lim=%d\n", lim) +
		"log=" + remotePath(log) + "\n" +
		"inner=" + shellQuote(pre+"exec /bin/sh -c "+shellQuote(c.Line)+"\n") + "\n" +
		"wrapper=" + shellQuote(launchWrapper) + "\n" +
		startScript
	// Command lines stay out of errors: they may hold a sensitive
	// variable's value, and the caller knows which step failed.
	out, err := s.script(ctx, "start (log "+log+")", script)
	if err != nil {
		// The command may have started before the call was cut (ctx
		// ended, the connection dropped): end whatever carries its mark,
		// so that no process is left that nobody knows of.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sshOrphanStop)
		defer cancel()
		if serr := s.Stop(sctx, Process{Mark: mark}, 0); serr != nil {
			return Process{}, fmt.Errorf("%w; and stopping what it may have started: %w", err, serr)
		}
		return Process{}, err
	}
	if string(out) == "exists\n" {
		return Process{}, s.errorf("start: log %s: %w", log, fs.ErrExist)
	}
	statLine, rest, _ := bytes.Cut(out, []byte("\n"))
	statLine, ok := bytes.CutPrefix(statLine, []byte("stat "))
	if !ok {
		return Process{}, s.errorf("start: unexpected reply %q", clip(out))
	}
	st, err := parseStat(statLine)
	if err != nil {
		return Process{}, s.errorf("start: %w", err)
	}
	p := Process{PID: st.PID, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime, Log: log, Mark: mark}
	for _, line := range strings.Split(string(rest), "\n") {
		if v, ok := strings.CutPrefix(line, "cmd "); ok {
			p.Command = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "log "); ok && v != "" {
			p.Log = v
		}
		if v, ok := strings.CutPrefix(line, "logid "); ok {
			p.LogID = strings.TrimSpace(v)
		}
	}
	if p.Command == "" {
		p.Command = "/bin/sh -c " + c.Line // it exited before we could read it
	}
	return p, nil
}

// inspectScript reads the process's stat and, once it has ended, the
// status its wrapper recorded. Between the command's end and the record
// there is a moment (the wrapper reaping it); while the wrapper lives, the
// script waits that out rather than report an unknown status.
const inspectScript = `st="$d/$g.status"
n=0
while :; do
	s=
	read -r s 2>/dev/null </proc/$p/stat
	case $s in
	"" | *") Z "* | *") X "*) ;;
	*) break ;;
	esac
	[ -f "$st" ] && break
	w=
	read -r w 2>/dev/null </proc/$g/stat
	case $w in "" | *") Z "* | *") X "*) break ;; esac
	n=$((n+1)); [ $n -ge 50 ] && break
	sleep 0.01
done
printf 'stat %s\n' "$s"
if [ -f "$st" ]; then read -r x <"$st"; printf 'status %s\n' "$x"; fi
`

// Inspect reads p's state on the host in one round trip.
func (s *SSH) Inspect(ctx context.Context, p Process) (ProcessState, error) {
	g := p.PGID
	if p.Daemon {
		g = 0 // no wrapper leads a daemon's group, and none records its status
	}
	script := stateDir + fmt.Sprintf("p=%d g=%d\n", p.PID, g) + inspectScript
	out, err := s.script(ctx, fmt.Sprintf("inspect pid %d", p.PID), script)
	if err != nil {
		return ProcessState{}, err
	}
	var statLine, status string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "stat "); ok {
			statLine = v
		}
		if v, ok := strings.CutPrefix(line, "status "); ok {
			status = strings.TrimSpace(v)
		}
	}
	state := ProcessState{ExitCode: -1}
	if statLine != "" {
		st, err := parseStat([]byte(statLine))
		if err != nil {
			return ProcessState{}, s.errorf("inspect pid %d: %w", p.PID, err)
		}
		switch {
		case p.StartTime != 0 && st.StartTime != p.StartTime:
			state.Replaced, state.Exited = true, true
		case st.Zombie():
			state.Exited = true
		default:
			state.Alive, state.PGID, state.Session = true, st.PGID, st.Session
			return state, nil
		}
	} else {
		state.Exited = true
	}
	if status != "" {
		n, err := strconv.Atoi(status)
		if err != nil {
			return state, s.errorf("inspect pid %d: exit status %q: %w", p.PID, status, err)
		}
		state.ExitCode, state.Signal = shellStatus(n)
	}
	return state, nil
}

// shellStatus splits a status as sh reports it: 128+N means signal N.
func shellStatus(n int) (int, string) {
	if n > 128 && n < 128+65 {
		return -1, unix.SignalName(syscall.Signal(n - 128))
	}
	return n, ""
}

// membersScript lists the processes carrying the launch's mark (the
// files that matched: its limit, or its variable as a whole entry of the
// environment: one grep reads both), then every process as procScript
// does. When nothing carries the mark and the launch has no pid of its
// own to prove by (what a run step's command left: quick=1), that is the
// answer, and the process table is not read: a run step's look for what
// its command left costs one grep.
const membersScript = `read -r self </proc/self/stat
echo "self ${self%% *} $$"
found=$(grep -lszE -e "Max realtime timeout +$lim " -e "^LOCKSTEP_LAUNCH_$mark=1\$" /proc/[0-9]*/limits /proc/[0-9]*/environ 2>/dev/null)
[ -n "$found" ] && echo "$found"
[ -z "$found" ] && [ "$quick" = 1 ] && exit 0
echo "==lockstep-stats"
cat /proc/[0-9]*/stat 2>/dev/null
echo "==lockstep-cmdlines"
head -v -c 65536 -- /proc/[0-9]*/cmdline 2>/dev/null
exit 0
`

// Members lists the live processes of the launch p on the host, in one
// round trip (see Target.Members).
func (s *SSH) Members(ctx context.Context, p Process) ([]ProcessInfo, error) {
	lim, ok := markLimit(p.Mark)
	quick := 0
	if p.PID == 0 && p.PGID == 0 {
		if !ok {
			return nil, nil // nothing to find it by
		}
		quick = 1
	}
	script := fmt.Sprintf("lim=%d mark=%s quick=%d\n", lim, shellQuote(cmp.Or(p.Mark, "-")), quick) + membersScript
	out, err := s.script(ctx, fmt.Sprintf("members of pid %d", p.PID), script)
	if err != nil {
		return nil, err
	}
	head, rest, found := bytes.Cut(out, []byte("==lockstep-stats\n"))
	if !found {
		return nil, nil // the quick answer: nothing carries the mark
	}
	stats, cmdlines, _ := bytes.Cut(rest, []byte("==lockstep-cmdlines\n"))
	self, worker, lines := scriptSelf(strings.Split(string(head), "\n"))
	marked := map[int]bool{}
	for _, l := range lines {
		// /proc/PID/limits or /proc/PID/environ
		f := strings.Split(l, "/")
		if len(f) == 4 && p.Mark != "" {
			if pid, err := strconv.Atoi(f[2]); err == nil {
				marked[pid] = true
			}
		}
	}
	cmds := splitCmdlines(cmdlines)
	var scan []procSeen
	for _, l := range strings.Split(string(stats), "\n") {
		st, err := parseStat([]byte(l))
		if err != nil {
			continue
		}
		scan = append(scan, procSeen{stat: st, marked: marked[st.PID], command: procCommand(cmds[st.PID], st.Comm)})
	}
	return members(p, scan, self, worker), nil
}

// sshStopPoll is how often Stop looks for what is left of the launch: a
// round trip each time.
const sshStopPoll = 50 * time.Millisecond

// sshKillWait bounds how long Stop waits for the kernel to end the
// members it sent SIGKILL.
const sshKillWait = 5 * time.Second

// signalScript sends $sig to each process of $procs (PID:STARTTIME) whose
// start time is still the one the scan saw, so a pid reused since is not
// hit (the check and the kill are microseconds apart).
const signalScript = `for e in $procs; do
	pid=${e%%:*} t=${e#*:}
	read -r l 2>/dev/null </proc/$pid/stat || continue
	set -- ${l##*") "}
	[ "${20}" = "$t" ] || continue
	for s in $sig; do kill -s $s $pid 2>/dev/null; done
done
exit 0
`

// sshOrphanStop bounds the Stop of a launch whose Start failed midway.
const sshOrphanStop = 10 * time.Second

// Stop ends every member of the launch p on the host: SIGTERM and
// SIGCONT (so a stopped process gets to handle TERM), SIGKILL after
// grace, and returns once none is left. A member found after the first
// signals gets them too. When SIGKILL ended the wrapper before it could
// record the command's status, Stop records 137 (killed) for Inspect.
func (s *SSH) Stop(ctx context.Context, p Process, grace time.Duration) error {
	if p.PGID <= 1 && p.Mark == "" {
		return s.errorf("stop pid %d: no process group to signal (pgid %d)", p.PID, p.PGID)
	}
	type proc struct {
		pid   int
		start uint64
	}
	signalled := map[proc]bool{}
	killAt := time.Now().Add(grace)
	var killedAt time.Time
	for {
		ms, err := s.Members(ctx, p)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			break
		}
		var send []ProcessInfo
		sig := "TERM CONT"
		switch now := time.Now(); {
		case !killedAt.IsZero() && now.Sub(killedAt) > sshKillWait:
			return s.errorf("stop pid %d: %d processes still there %s after SIGKILL", p.PID, len(ms), sshKillWait)
		case !now.Before(killAt):
			send, sig = ms, "KILL"
			if killedAt.IsZero() {
				killedAt = now
			}
		default:
			for _, m := range ms {
				if k := (proc{m.PID, m.StartTime}); !signalled[k] {
					signalled[k] = true
					send = append(send, m)
				}
			}
		}
		if len(send) > 0 {
			var b strings.Builder
			for _, m := range send {
				fmt.Fprintf(&b, "%d:%d ", m.PID, m.StartTime)
			}
			script := fmt.Sprintf("procs=%s sig=%s\n", shellQuote(b.String()), shellQuote(sig)) + signalScript
			if _, err := s.script(ctx, fmt.Sprintf("stop process group %d", p.PGID), script); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return s.errorf("stop pid %d: %w", p.PID, ctx.Err())
		case <-time.After(sshStopPoll):
		}
	}
	if !killedAt.IsZero() && p.PGID > 1 && p.PGID != p.PID && !p.Daemon {
		// The wrapper died with the command, before it could say how.
		script := stateDir + fmt.Sprintf("g=%d\n", p.PGID) + `[ -f "$d/$g.status" ] || echo 137 >"$d/$g.status"` + "\n"
		if _, err := s.script(ctx, fmt.Sprintf("stop process group %d", p.PGID), script); err != nil {
			return err
		}
	}
	return nil
}

// MoveAside renames path to path.prev-<UTC time> (.1, .2... when taken).
func (s *SSH) MoveAside(ctx context.Context, path string) (string, error) {
	script := "p=" + remotePath(path) + "\n" +
		"base=\"$p.prev-" + time.Now().UTC().Format("20060102T150405Z") + "\"\n" +
		`[ -L "$p" ] || [ -f "$p" ] || exit 0
t=$base i=0
while [ -e "$t" ] || [ -L "$t" ]; do i=$((i+1)); t="$base.$i"; done
mv -- "$p" "$t" || exit
printf '%s' "$t"
`
	out, err := s.script(ctx, "move aside "+path, script)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// statFormat prints size, device:inode (as the local target's FileInfo.ID)
// and the modification time; %y last, it holds spaces.
const statFormat = `'%s %d:%i %y'`

// Stat describes path on the host (following symbolic links).
func (s *SSH) Stat(ctx context.Context, path string) (FileInfo, error) {
	script := "p=" + remotePath(path) + "\n" +
		`if [ -e "$p" ]; then exec stat -L -c ` + statFormat + ` -- "$p"; fi
echo missing
`
	out, err := s.script(ctx, "stat "+path, script)
	if err != nil {
		return FileInfo{}, err
	}
	return s.parseFileInfo(path, strings.TrimSpace(string(out)))
}

// SHA256 hashes the file on the host, with its stat in the same call.
func (s *SSH) SHA256(ctx context.Context, path string) (string, FileInfo, error) {
	script := "p=" + remotePath(path) + "\n" +
		`[ -e "$p" ] || { echo missing; exit 0; }
stat -L -c ` + statFormat + ` -- "$p" || exit 1
exec sha256sum -- "$p"
`
	out, err := s.script(ctx, "hash "+path, script)
	if err != nil {
		return "", FileInfo{}, err
	}
	statLine, sum, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	fi, err := s.parseFileInfo(path, statLine)
	if err != nil || !fi.Exists {
		return "", fi, err
	}
	sum, _, _ = strings.Cut(strings.TrimSpace(sum), " ")
	if len(sum) != 64 {
		return "", FileInfo{}, s.errorf("hash %s: sha256sum printed %q", path, sum)
	}
	return sum, fi, nil
}

func (s *SSH) parseFileInfo(path, line string) (FileInfo, error) {
	if line == "missing" {
		return FileInfo{}, nil
	}
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		return FileInfo{}, s.errorf("stat %s: unexpected reply %q", path, line)
	}
	size, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return FileInfo{}, s.errorf("stat %s: size %q: %w", path, f[0], err)
	}
	mod, err := time.Parse("2006-01-02 15:04:05.999999999 -0700", f[2])
	if err != nil {
		return FileInfo{}, s.errorf("stat %s: time %q: %w", path, f[2], err)
	}
	return FileInfo{Exists: true, Size: size, ID: f[1], ModTime: mod}, nil
}

// readScript opens the file once, describes it through that descriptor
// (so a rename or a new file at the same path cannot slip in between) and
// reads from it (readBytes).
const readScript = `{ command exec 3<"$p"; } 2>/dev/null || {
	if [ -e "$p" ]; then echo "cannot open $p for reading" >&2; exit 1; fi
	echo missing
	exit 0
}
stat -L -c ` + statFormat + ` /proc/self/fd/3 || exit
` + readBytes

// readBytes ends readScript and readFileScript: it writes what fd 3 holds
// from $off, $max bytes at most. A log followed over SSH is read at every
// turn of a wait, so this is one exec of dd, in place of the script's
// shell, where dd counts bytes (GNU coreutils: $dd is 1); else tail and
// head (two more processes, and a fork for the pipe). What it reads past
// the size the stat line gave (the file grew since) is cut by the caller
// (upToSize), so the bytes are those of the file the stat described, as
// it was then.
const readBytes = `[ "$dd" = 1 ] && exec dd bs=65536 skip=$off count=$max iflag=skip_bytes,count_bytes status=none <&3
tail -c +$((off + 1)) <&3 | head -c $max
`

// upToSize is data read from off, cut to the size info gave.
func upToSize(data []byte, off int64, info FileInfo) []byte {
	n := max(min(int64(len(data)), info.Size-off), 0)
	if n == 0 {
		return nil
	}
	return data[:n]
}

// readScript runs a script ending in readBytes: with dd, unless the host's
// dd turned out not to count bytes (BusyBox's before 1.35 refuses
// iflag=count_bytes), in which case it is run again without.
func (s *SSH) readScript(ctx context.Context, what, script string) ([]byte, error) {
	if !s.noByteDD.Load() {
		out, err := s.script(ctx, what, "dd=1\n"+script)
		if err == nil || !strings.Contains(err.Error(), "dd:") {
			return out, err
		}
		s.noByteDD.Store(true)
	}
	return s.script(ctx, what, "dd=0\n"+script)
}

// ReadAt reads up to max bytes of path from off, in one round trip.
func (s *SSH) ReadAt(ctx context.Context, path string, off int64, max int) ([]byte, FileInfo, error) {
	defer s.warmWatcher() // a file followed here is soon watched
	if off < 0 {
		return nil, FileInfo{}, s.errorf("read %s: negative offset %d", path, off)
	}
	if max <= 0 {
		info, err := s.Stat(ctx, path)
		return nil, info, err
	}
	script := "p=" + remotePath(path) + "\n" + fmt.Sprintf("off=%d max=%d\n", off, max) + readScript
	out, err := s.readScript(ctx, "read "+path, script)
	if err != nil {
		return nil, FileInfo{}, err
	}
	line, data, _ := bytes.Cut(out, []byte("\n"))
	info, err := s.parseFileInfo(path, string(line))
	if err != nil {
		return nil, FileInfo{}, err
	}
	return upToSize(data, off, info), info, nil
}

// readFileScript finds the file with identity $id as ReadFile does: at
// $at, at $p, among the descriptors of $pids, among the entries of $p's
// directory with its inode, opening each regular file (a fifo could
// block) on fd 3 and checking the identity there. It prints where it
// found the file, its stat line, then the bytes, as readScript.
const readFileScript = `try() {
	[ -f "$1" ] || return 1
	{ command exec 3<"$1"; } 2>/dev/null || return 1
	info=$(stat -L -c ` + statFormat + ` /proc/self/fd/3) || return 1
	case $info in *" $id "*) return 0 ;; esac
	exec 3<&-
	return 1
}
nl='
'
found=
for c in "$at" "$p"; do [ -n "$c" ] && try "$c" && { found=$c; break; }; done
if [ -z "$found" ]; then
	held=$(for q in $pids; do stat -L -c '%d:%i %n' /proc/$q/fd/* 2>/dev/null; done | sed -n "s|^$id ||p")
	beside=$(find "$(dirname -- "$p")" -maxdepth 1 -inum "${id#*:}" 2>/dev/null)
	IFS=$nl
	for c in $held $beside; do try "$c" && { found=$c; break; }; done
	unset IFS
fi
[ -n "$found" ] || { echo missing; exit 0; }
printf '%s\n%s\n' "$found" "$info"
` + readBytes

// fileID is a FileInfo.ID as stat prints it: device and inode.
var fileID = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// ReadFile reads the file ref names by identity, in one round trip.
func (s *SSH) ReadFile(ctx context.Context, ref FileRef, off int64, max int) ([]byte, FileInfo, error) {
	defer s.warmWatcher() // a file followed here is soon watched
	if off < 0 {
		return nil, FileInfo{}, s.errorf("read %s: negative offset %d", ref.Path, off)
	}
	if !fileID.MatchString(ref.ID) {
		return nil, FileInfo{}, s.errorf("read %s: no file identity to read by", ref.Path)
	}
	if max < 0 {
		max = 0 // the file's description alone
	}
	var pids []string
	for _, p := range ref.PIDs {
		if p > 0 {
			pids = append(pids, strconv.Itoa(p))
		}
	}
	at := ""
	if ref.At != "" && ref.At != ref.Path {
		at = remotePath(ref.At)
	}
	script := "p=" + remotePath(ref.Path) + " at=" + cmp.Or(at, "''") + " id=" + shellQuote(ref.ID) +
		" pids=" + shellQuote(strings.Join(pids, " ")) + fmt.Sprintf(" off=%d max=%d\n", off, max) + readFileScript
	out, err := s.readScript(ctx, "read "+ref.Path, script)
	if err != nil {
		return nil, FileInfo{}, err
	}
	if string(out) == "missing\n" {
		return nil, FileInfo{}, nil
	}
	found, out, _ := bytes.Cut(out, []byte("\n"))
	line, data, _ := bytes.Cut(out, []byte("\n"))
	info, err := s.parseFileInfo(ref.Path, string(line))
	if err != nil {
		return nil, FileInfo{}, err
	}
	info.Path = string(found)
	return upToSize(data, off, info), info, nil
}

// procScript lists every process: its stat lines, then its command lines
// framed by head's "==> FILE <==" headers: two processes for the lot.
const procScript = `read -r self </proc/self/stat
echo "self ${self%% *} $$"
cat /proc/[0-9]*/stat 2>/dev/null
echo "==lockstep-cmdlines"
head -v -c 65536 -- /proc/[0-9]*/cmdline 2>/dev/null
exit 0
`

// cmdlineHeader matches the header head prints before each file, and the
// newline it prints before every header but the first.
var cmdlineHeader = regexp.MustCompile(`(?:^|\n)==> /proc/(\d+)/cmdline <==\n`)

// Processes lists the host's processes whose command line matches the
// regular expression match. lockstep's own remote processes (the script
// and the workers) are left out.
func (s *SSH) Processes(ctx context.Context, match string) ([]ProcessInfo, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return nil, fmt.Errorf("processes: match %q: %w", match, err)
	}
	out, err := s.script(ctx, "list processes", procScript)
	if err != nil {
		return nil, err
	}
	stats, cmdlines, _ := bytes.Cut(out, []byte("==lockstep-cmdlines\n"))
	// The script's subshell, its children and the worker running it.
	self, worker, lines := scriptSelf(strings.Split(string(stats), "\n"))
	cmds := splitCmdlines(cmdlines)
	var all []procSeen
	for _, l := range lines {
		if l == "" {
			continue
		}
		st, err := parseStat([]byte(l))
		if err != nil || st.PID == self || st.PPID == self || st.PID == worker {
			continue
		}
		all = append(all, procSeen{stat: st, command: procCommand(cmds[st.PID], st.Comm)})
	}
	watching := watchProcesses(all)
	var list []ProcessInfo
	for _, p := range all {
		st, cmd := p.stat, p.command
		if strings.Contains(cmd, workerMark) || watching[st.PID] || !re.MatchString(cmd) {
			continue
		}
		list = append(list, ProcessInfo{PID: st.PID, PPID: st.PPID, PGID: st.PGID, Session: st.Session, StartTime: st.StartTime, State: st.State, Command: cmd})
	}
	return list, nil
}

// scriptSelf reads the "self PID PPID" line a process listing script
// starts with (its shell and the worker running it: lockstep's own) and
// returns the lines after it; -1 for pids it did not say.
func scriptSelf(lines []string) (self, worker int, rest []string) {
	self, worker = -1, -1
	if len(lines) > 0 {
		if v, ok := strings.CutPrefix(lines[0], "self "); ok {
			a, b, _ := strings.Cut(v, " ")
			self, _ = strconv.Atoi(a)
			worker, _ = strconv.Atoi(b)
			lines = lines[1:]
		}
	}
	return self, worker, lines
}

// splitCmdlines reads head -v output of /proc/PID/cmdline files.
func splitCmdlines(b []byte) map[int][]byte {
	out := map[int][]byte{}
	idx := cmdlineHeader.FindAllSubmatchIndex(b, -1)
	for i, m := range idx {
		pid, err := strconv.Atoi(string(b[m[2]:m[3]]))
		if err != nil {
			continue
		}
		end := len(b)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[pid] = b[m[1]:end]
	}
	return out
}

// listenScript prints the TCP sockets listening on the port, then the
// owners of those sockets as "/proc/PID/fd socket:[INODE]" (one find over
// every /proc/PID/fd, matching the link targets itself), then the owners'
// command lines and stat lines: five processes in all, whatever the number
// of processes on the host. The -lname patterns escape the brackets, which
// fnmatch would read as a set.
const listenScript = portSocketsScript + `fds=$(find /proc/[0-9]*/fd -maxdepth 1 \( "$@" \) -printf '%h %l\n' 2>/dev/null)
printf '%s\n' "$fds"
echo "==lockstep-cmdlines"
set -f
c= s= seen=' '
for w in $fds; do
	case $w in /proc/*/fd)
		x=${w#/proc/} x=${x%/fd}
		case $seen in *" $x "*) ;; *) seen="$seen$x " c="$c /proc/$x/cmdline" s="$s /proc/$x/stat" ;; esac
		;;
	esac
done
[ -n "$c" ] && head -v -c 65536 -- $c 2>/dev/null
echo
echo "==lockstep-stats"
[ -n "$s" ] && cat $s 2>/dev/null
exit 0
`

// Listeners lists the sockets listening on TCP port on the host and the
// processes owning them (PID 0 when the remote user cannot see the owner).
func (s *SSH) Listeners(ctx context.Context, port int) ([]Listener, error) {
	if port <= 0 || port > 65535 {
		return nil, s.errorf("listeners: port %d out of range", port)
	}
	out, err := s.script(ctx, fmt.Sprintf("listeners on port %d", port), fmt.Sprintf("port=%d\n", port)+listenScript)
	if err != nil {
		return nil, err
	}
	tables, rest, _ := bytes.Cut(out, []byte("==lockstep-fds\n"))
	fdText, cmdText, _ := bytes.Cut(rest, []byte("==lockstep-cmdlines\n"))
	cmdText, statText, _ := bytes.Cut(cmdText, []byte("\n==lockstep-stats\n"))
	pgids := map[int]int{}
	for _, line := range bytes.Split(statText, []byte("\n")) {
		if st, err := parseStat(line); err == nil {
			pgids[st.PID] = st.PGID
		}
	}
	sockets, err := parseNetTCP(tables)
	if err != nil {
		return nil, s.errorf("listeners on port %d: %w", port, err)
	}
	owners := socketOwners(fdText)
	cmds := splitCmdlines(cmdText)
	var list []Listener
	for _, sk := range sockets {
		if sk.State != tcpListen || int(sk.Local.Port()) != port || sk.Inode == 0 {
			continue
		}
		addr := sk.Local.String()
		pids := owners[sk.Inode]
		if len(pids) == 0 {
			list = append(list, Listener{Address: addr})
			continue
		}
		// A socket shared by a parent and its workers is listed once
		// per process, as the local target does.
		for _, pid := range pids {
			list = append(list, Listener{Address: addr, PID: pid, PGID: pgids[pid], Command: parseCmdline(cmds[pid])})
		}
	}
	sortListeners(list)
	return list, nil
}

// Dial connects to addr from the host (direct-tcpip): 127.0.0.1 is the
// host's loopback.
func (s *SSH) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := s.dialReady(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := c.client.DialContext(ctx, network, addr)
	if err != nil {
		var oc *ssh.OpenChannelError
		if !errors.As(err, &oc) && ctx.Err() == nil && c.lost() {
			return nil, s.disconnected(c, "dial "+addr)
		}
		return nil, s.errorf("dial %s %s from the host: %w", network, addr, err)
	}
	return conn, nil
}

// PrepareDial connects, and runs the session quickAcks needs, before the
// first Dial (DialPreparer).
func (s *SSH) PrepareDial(ctx context.Context) error {
	_, err := s.dialReady(ctx)
	return err
}

// dialReady returns the live connection, ready to carry forwarded traffic.
func (s *SSH) dialReady(ctx context.Context) (*sshConn, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.quickAcks(ctx)
	return c, nil
}
