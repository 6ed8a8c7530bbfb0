package runner_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
	"lockstep/targets/sshtest"
)

// BenchmarkLogLineWait measures, in one run, how long a wait takes to
// confirm a log line from the moment it is written, beside the fastest
// tool there is for it: `tail -F LOG | grep -m1 LINE` (inotify), ready
// before the line is written, timed to grep's exit. Rounds alternate
// lockstep and tail, each writing its line at a random moment 0.1-1 s
// after it started waiting (over SSH lockstep's 1.1-2 s: the first watch
// on a connection waits for the host's watcher to start, a login shell,
// and polls meanwhile). It reports both medians and their ratio (x-tail);
// over SSH (a loopback OpenSSH sshd, CI=true) also the median round trip
// of one of the target's scripts (rtt-ms, a Stat), of the read a
// follower makes of the new line (read-ms, a ReadAt), and lockstep's
// median less the round trip (over-rtt-ms):
//
//	CI=true go test ./runner -run '^$' -bench LogLineWait -benchtime 20x
//
// Over SSH the anchor is `ssh HOST tail -F LOG` over a connection opened
// before, its lines matched as they arrive (grep -m1's job, done here).
func BenchmarkLogLineWait(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		dir := b.TempDir()
		log := filepath.Join(dir, "app.log")
		p, scope := latencyPlan(b, dir, "", log)
		var ls, ts []time.Duration
		for i := 0; b.Loop(); i++ {
			sides := []func(){
				func() {
					ls = append(ls, lockstepWait(b, p, scope, log, func(string, func(events.Event)) (targets.Target, error) { return targets.NewLocal(), nil }, benchDelay()))
				},
				func() { ts = append(ts, tailWait(b, log, nil)) },
			}
			if i%2 == 1 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				side()
			}
		}
		reportPair(b, ls, ts)
	})
	b.Run("ssh", func(b *testing.B) {
		srv := sshtest.StartSSHD(b)
		dir := b.TempDir()
		log := filepath.Join(dir, "app.log")
		known := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(known, []byte(sshtest.KnownHostsLine("127.0.0.1", srv.Port, srv.HostKey)), 0o600); err != nil {
			b.Fatal(err)
		}
		box := fmt.Sprintf(`target "box" {
  ssh {
    host          = "127.0.0.1"
    port          = %d
    user          = %q
    identity_file = %q
    known_hosts   = %q
  }
}
`, srv.Port, srv.User, srv.UserKey, known)
		p, scope := latencyPlan(b, dir, box, log)
		sshArgs := []string{"-T", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + known, "-o", "StrictHostKeyChecking=yes",
			"-i", srv.UserKey, "-p", fmt.Sprint(srv.Port), srv.User + "@127.0.0.1"}
		tg := targets.NewSSH("box", targets.SSHConfig{Host: "127.0.0.1", Port: srv.Port, User: srv.User, IdentityFiles: []string{srv.UserKey}, KnownHosts: []string{known}})
		defer tg.Close()
		var ls, ts, rtt, reads []time.Duration
		for i := 0; b.Loop(); i++ {
			sides := []func(){
				func() {
					ls = append(ls, lockstepWait(b, p, scope, log, runner.OpenTarget(p, scope), time.Second+benchDelay()))
				},
				func() { ts = append(ts, tailWait(b, log, sshArgs)) },
			}
			if i%2 == 1 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				side()
			}
			for range 3 {
				t0 := time.Now()
				if _, err := tg.Stat(context.Background(), log); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, _, err := tg.ReadAt(context.Background(), log, 0, 1<<20); err != nil {
					b.Fatal(err)
				}
				rtt, reads = append(rtt, t1.Sub(t0)), append(reads, time.Since(t1))
			}
		}
		reportPair(b, ls, ts)
		b.ReportMetric(ms(median(rtt)), "rtt-ms")
		b.ReportMetric(ms(median(reads)), "read-ms")
		b.ReportMetric(ms(median(ls)-median(rtt)), "over-rtt-ms")
	})
}

// latencyPlan is a plan that waits for the line in log, on target box if
// box (its HCL) is given, after a launch (which opens the connection).
func latencyPlan(b *testing.B, dir, box, log string) (*plans.Plan, *plans.Scope) {
	target := "local"
	if box != "" {
		target = "box"
	}
	src := fmt.Sprintf(`
plan "latency" {}
%s
step "launch" "server" {
  target  = target.%s
  command = "exec sleep 60"
  log     = %q
}
step "wait" "ready" {
  target  = target.%s
  timeout = "30s"
  probe "log" "app" {
    path = %q
  }
  postcondition {
    condition = strcontains(probe.app.text, "ready to roll")
  }
}
`, box, target, filepath.Join(dir, "server.log"), target, log)
	p, diags := plans.Parse(filepath.Join(dir, "plan.hcl"), []byte(src))
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return p, scope
}

// lockstepWait runs the plan once and returns the time from the line's
// write to the wait's confirmation.
func lockstepWait(b *testing.B, p *plans.Plan, scope *plans.Scope, log string, open runner.TargetOpener, delay time.Duration) time.Duration {
	if err := os.WriteFile(log, []byte("loading\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	w := &writeOnWait{path: log, delay: delay}
	res := runner.Run(context.Background(), runner.Options{Plan: p, Scope: scope, Observer: w, Targets: open})
	if res.Status != events.Confirmed {
		b.Fatalf("status %s", res.Status)
	}
	return w.confirmed.Sub(w.written)
}

// writeOnWait appends the awaited line a little after the wait step
// starts and notes when it is confirmed.
type writeOnWait struct {
	path               string
	delay              time.Duration
	written, confirmed time.Time
	done               chan struct{}
}

func (w *writeOnWait) Emit(e events.Event) {
	if e.Step == nil || e.Step.Addr != "wait.ready" {
		return
	}
	switch e.Type {
	case events.StepStarted:
		w.done = make(chan struct{})
		go func() {
			defer close(w.done)
			time.Sleep(w.delay)
			w.written = appendLine(w.path)
		}()
	case events.StepFinished:
		w.confirmed = time.Now()
		<-w.done
	}
}

// tailWait starts `tail -n0 -F log | grep -m1 -q LINE` (over SSH: `ssh
// HOST tail -n0 -F log`, matched here), waits until tail watches the
// file, writes the line a moment later and returns the time from the
// write to the match: grep's exit, or the line read from ssh.
func tailWait(b *testing.B, log string, sshArgs []string) time.Duration {
	if err := os.WriteFile(log, []byte("loading\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if sshArgs != nil {
		return sshTailWait(b, log, sshArgs)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	tail := exec.Command("tail", "-n0", "-F", log)
	tail.Stdout = pw
	grep := exec.Command("grep", "-m1", "-q", "ready to roll")
	grep.Stdin = pr
	if err := tail.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tail.Process.Kill(); _ = tail.Wait() }()
	if err := grep.Start(); err != nil {
		b.Fatal(err)
	}
	pw.Close()
	pr.Close()
	watching(b, tail.Process.Pid)
	time.Sleep(benchDelay())
	written := appendLine(log)
	if err := grep.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(written)
}

// watching waits until process pid has an inotify watch.
func watching(b *testing.B, pid int) {
	for range 2000 {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
		for _, fd := range fds {
			if data, err := os.ReadFile(fd); err == nil && strings.Contains(string(data), "inotify wd:") {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("tail (pid %d) does not watch with inotify", pid)
}

func sshTailWait(b *testing.B, log string, sshArgs []string) time.Duration {
	// The remote shell says when its tail has its inotify watch.
	script := `tail -n0 -F "$1" & p=$!
until grep -qs "^inotify wd:" /proc/$p/fdinfo/*; do sleep 0.005; done
echo lockstep-bench-ready
wait`
	tail := exec.Command("ssh", append(sshArgs, "sh -c '"+script+"' sh "+log)...)
	out, err := tail.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	tail.Stderr = os.Stderr
	if err := tail.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tail.Process.Kill(); _ = tail.Wait() }()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "lockstep-bench-ready\n" {
		b.Fatalf("ssh tail: %q, %v", line, err)
	}
	written := make(chan time.Time, 1)
	go func() { time.Sleep(benchDelay()); written <- appendLine(log) }()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(line, "ready to roll") {
			now := time.Now()
			return now.Sub(<-written)
		}
	}
}

// benchDelay is when the line is written after the waiting began: a
// moment that favours no poll's phase.
func benchDelay() time.Duration {
	return 100*time.Millisecond + time.Duration(rand.Int64N(int64(900*time.Millisecond)))
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func reportPair(b *testing.B, lockstep, tail []time.Duration) {
	b.ReportMetric(ms(median(lockstep)), "lockstep-ms")
	b.ReportMetric(ms(median(tail)), "tail-F-ms")
	if t := median(tail); t > 0 {
		b.ReportMetric(float64(median(lockstep))/float64(t), "x-tail")
	}
	b.ReportMetric(0, "ns/op")
}
