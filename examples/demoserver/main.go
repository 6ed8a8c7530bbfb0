// Command demoserver behaves like an LLM model server (SGLang, vLLM) closely
// enough for lockstep's quickstart plan and for the runner's end-to-end
// fault tests, without a GPU: it logs its config, loads "shards" for a
// while, binds its port only once loaded, warms up (health 503), then
// serves OpenAI-style completions until SIGTERM.
//
// Its fault switches make it fail the ways real servers failed in the
// night lockstep comes from: out of memory while loading, a config that is
// silently not the one asked for, NaN answers from a healthy server, a
// leftover that keeps its port after SIGTERM, a crash after a while, a
// crash on the first request.
//
// Log lines (stdout, one write per line, in this order):
//
//	config: backend=<name> port=<port>
//	loading shards: <pct>% (<i>/<N>)        (N lines)
//	listening on <host>:<port>
//	ready to serve on :<port>
//	shutting down                          (on SIGTERM or SIGINT)
//
// Exit status: 0 after SIGTERM/SIGINT, 1 for a failure while loading (the
// injected one, or the port already taken), 2 for bad flags, 3 for
// --exit-after, 134 for --crash-on-request.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(context.Background(), cfg, os.Stdout, sigs))
}

// config is the command line, parsed before anything runs.
type config struct {
	host       string
	port       int
	backend    string
	model      string
	shards     int
	loadTime   time.Duration
	warmup     time.Duration
	tokenDelay time.Duration
	slots      int

	// Fault switches.
	failWhileLoading bool
	ignoreConfig     bool
	nan              bool
	keepPort         bool
	exitAfter        time.Duration
	crashOnRequest   bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demoserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.host, "host", "127.0.0.1", "address to bind")
	fs.IntVar(&c.port, "port", 8000, "TCP port to serve on (0 picks a free one)")
	fs.StringVar(&c.backend, "backend", "flashinfer_cutlass", "backend name: the config under trial, echoed in the first log line")
	fs.StringVar(&c.model, "model", "demo", "model name served by /v1/models and echoed in answers")
	fs.IntVar(&c.shards, "shards", 8, "number of checkpoint shards to load")
	fs.DurationVar(&c.loadTime, "load-time", 2*time.Second, "time to load all shards")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "time between binding the port and being ready (health 503)")
	fs.DurationVar(&c.tokenDelay, "token-delay", 0, "time to generate each output token")
	fs.IntVar(&c.slots, "slots", 0, "answers generated at once, as llama-server's --parallel; the others queue (0: no limit)")
	fs.BoolVar(&c.failWhileLoading, "fail-while-loading", false, "fault: CUDA out of memory at about half the shards, exit 1")
	fs.BoolVar(&c.ignoreConfig, "ignore-config", false, "fault: run backend=default whatever --backend says")
	fs.BoolVar(&c.nan, "nan", false, "fault: healthy, but every completion is \"NaN NaN NaN\"")
	fs.BoolVar(&c.keepPort, "keep-port", false, "fault: on SIGTERM log shutting down but keep serving until killed")
	fs.DurationVar(&c.exitAfter, "exit-after", 0, "fault: crash with exit status 3 after serving for this long")
	fs.BoolVar(&c.crashOnRequest, "crash-on-request", false, "fault: die with exit status 134 on the first completion")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demoserver: unexpected argument %q\n", fs.Arg(0))
		return c, errors.New("unexpected arguments")
	}
	if c.shards < 1 {
		fmt.Fprintln(stderr, "demoserver: --shards must be at least 1")
		return c, errors.New("bad --shards")
	}
	if c.slots < 0 {
		fmt.Fprintln(stderr, "demoserver: --slots must not be negative")
		return c, errors.New("bad --slots")
	}
	if c.port < 0 || c.port > 65535 {
		fmt.Fprintln(stderr, "demoserver: --port must be in 0..65535")
		return c, errors.New("bad --port")
	}
	if c.loadTime < 0 || c.warmup < 0 || c.tokenDelay < 0 || c.exitAfter < 0 {
		fmt.Fprintln(stderr, "demoserver: durations must not be negative")
		return c, errors.New("negative duration")
	}
	return c, nil
}

// Exit statuses, as a plan or the runner sees them.
const (
	exitOK            = 0
	exitLoadFailed    = 1
	exitCrashed       = 3
	exitAbortedDecode = 134 // 128 + SIGABRT, as a shell reports an abort
)

// run is the server's whole life: config line, loading, bind, warmup,
// serving, and the exit status. Signals come in on sigs so that tests and
// main share one path.
func run(ctx context.Context, cfg config, stdout io.Writer, sigs <-chan os.Signal) int {
	log := newLogger(stdout)

	backend := cfg.backend
	if cfg.ignoreConfig {
		// The fault: the server that runs is not the config under trial,
		// and only this line tells.
		backend = "default"
	}
	log.printf("config: backend=%s port=%d", backend, cfg.port)

	if code, done := load(ctx, cfg, log, sigs); done {
		return code
	}

	srv, err := listen(cfg, backend, log)
	if err != nil {
		log.printf("OSError: %v", err)
		return exitLoadFailed
	}
	defer srv.close()
	log.printf("listening on %s", srv.addr())

	warm := time.NewTimer(cfg.warmup)
	defer warm.Stop()
	var crashAfter <-chan time.Time
	for {
		select {
		case <-warm.C:
			srv.setReady()
			log.printf("ready to serve on :%d", srv.port())
			if cfg.exitAfter > 0 {
				t := time.NewTimer(cfg.exitAfter)
				defer t.Stop()
				crashAfter = t.C
			}
		case <-crashAfter:
			log.printf("Traceback (most recent call last):")
			log.printf(`  File "/opt/demoserver/scheduler.py", line 88, in event_loop`)
			log.printf("RuntimeError: scheduler process died unexpectedly after serving for %s", cfg.exitAfter)
			return exitCrashed
		case <-srv.crashed:
			log.printf("RuntimeError: CUDA error: an illegal memory access was encountered")
			log.printf("Fatal Python error: Aborted")
			return exitAbortedDecode
		case err := <-srv.failed:
			log.printf("error: serving: %v", err)
			return exitLoadFailed
		case <-sigs:
			log.printf("shutting down")
			if cfg.keepPort {
				// The fault: a leftover that holds its port until KILLed.
				continue
			}
			srv.shutdown(time.Second)
			return exitOK
		case <-ctx.Done():
			return exitOK
		}
	}
}

// load logs one progress line per shard over cfg.loadTime. done is true when
// the server's life ended while loading (a signal, or the injected OOM).
func load(ctx context.Context, cfg config, log *logger, sigs <-chan os.Signal) (code int, done bool) {
	each := cfg.loadTime / time.Duration(cfg.shards)
	for i := 1; i <= cfg.shards; i++ {
		if cfg.failWhileLoading && i > cfg.shards/2 {
			log.printf("Traceback (most recent call last):")
			log.printf(`  File "/opt/demoserver/model_loader.py", line 212, in load_shard`)
			log.printf("    tensor = tensor.to(device, non_blocking=True)")
			log.printf("RuntimeError: CUDA error: out of memory")
			return exitLoadFailed, true
		}
		t := time.NewTimer(each)
		select {
		case <-t.C:
		case <-sigs:
			t.Stop()
			log.printf("shutting down")
			return exitOK, true
		case <-ctx.Done():
			t.Stop()
			return exitOK, true
		}
		log.printf("loading shards: %d%% (%d/%d)", i*100/cfg.shards, i, cfg.shards)
	}
	return 0, false
}
