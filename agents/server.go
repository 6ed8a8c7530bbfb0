package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"lockstep/plans"
	"lockstep/runner/records"
)

// FormatVersion is the format_version of every tool's answer. The events
// inside answers carry their own version (events.Version), as in
// `lockstep run --json`.
const FormatVersion = "1"

// Options configures a server. They come from `lockstep mcp`'s flags.
type Options struct {
	// Roots are the folders whose plans may be read and run; none: the
	// current folder.
	Roots []string
	// Targets are the target names a plan run may use; none: "local".
	Targets []string
	// Records overrides where attempts are recorded (records.Root).
	Records string
	// Version is lockstep's version, told to the client and kept in
	// each attempt's record.
	Version string
	// Host and User are kept in each attempt's record.
	Host, User string
	// Force, when it ends, cuts short the always steps of attempts being
	// stopped (a second Ctrl-C); nil: they run to their timeouts.
	Force context.Context
}

// Server is lockstep's MCP server. One serves one client session; the
// attempts it starts run in goroutines of their own.
type Server struct {
	roots   []string // absolute, symlinks resolved
	targets map[string]bool
	o       Options
	mcp     *mcp.Server

	mu   sync.Mutex
	live map[attemptKey]*live
	// base is the context the attempts run under: Serve cancels it when
	// the client goes away, so that no attempt outlives the session.
	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// New checks the options and builds the server with its tools.
func New(o Options) (*Server, error) {
	if len(o.Roots) == 0 {
		o.Roots = []string{"."}
	}
	if len(o.Targets) == 0 {
		o.Targets = []string{plans.LocalTarget}
	}
	s := &Server{o: o, targets: map[string]bool{}, live: map[attemptKey]*live{}}
	for _, r := range o.Roots {
		abs, err := filepath.Abs(r)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r, err)
		}
		if info, err := os.Stat(abs); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("root %s is not a folder", r)
		}
		s.roots = append(s.roots, abs)
	}
	for _, t := range o.Targets {
		s.targets[t] = true
	}
	s.base, s.cancel = context.WithCancelCause(context.Background())
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "lockstep", Title: "lockstep: steps confirmed by observed state", Version: o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	s.addTools()
	return s, nil
}

const instructions = `lockstep runs verification plans: HCL files of steps (run, launch, wait, assert, benchmark) that move on only when observed state confirms them. Write a plan, check it with validate, read what it will do with explain, start it with run (it answers at once with the attempt's number), follow it with status (wait_seconds waits for its end), stop it with cancel, and compare attempts with attempts, show and diff. A step is confirmed only when its postconditions held: quote the evidence from status, not your expectation.`

// Serve answers the client on t until it goes away or ctx ends. Then
// every attempt still running is cancelled, as Ctrl-C would, and Serve
// returns once each has stopped what it launched and finished its record.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	err := s.mcp.Run(ctx, t)
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		cause = errors.New("interrupted: the MCP client went away")
	}
	s.cancel(cause)
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

// RefusedError is a request the server will not serve: a plan outside
// its roots, a target not allowed.
type RefusedError struct{ Why, Fix string }

func (e *RefusedError) Error() string {
	if e.Fix == "" {
		return "refused: " + e.Why
	}
	return "refused: " + e.Why + "; " + e.Fix
}

// planPath resolves a plan path given by the client: relative to the
// first root, symlinks resolved, and inside one of the roots.
func (s *Server) planPath(arg string) (string, error) {
	if arg == "" {
		return "", errors.New("path is required: a plan file under " + strings.Join(s.roots, ", "))
	}
	p := arg
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.roots[0], p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Say whether it would have been allowed: no probing for
			// files outside the roots through the error's wording.
			if !s.inRoots(filepath.Clean(p)) {
				return "", s.outside(arg)
			}
			return "", fmt.Errorf("no plan file %s", arg)
		}
		return "", fmt.Errorf("plan %s: %w", arg, err)
	}
	if !s.inRoots(real) {
		return "", s.outside(arg)
	}
	if info, err := os.Stat(real); err != nil || info.IsDir() {
		return "", fmt.Errorf("%s is not a plan file", arg)
	}
	return real, nil
}

func (s *Server) inRoots(p string) bool {
	return slices.ContainsFunc(s.roots, func(root string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
	})
}

func (s *Server) outside(arg string) error {
	return &RefusedError{
		Why: fmt.Sprintf("%s is outside the folders this server may read (%s)", arg, strings.Join(s.roots, ", ")),
		Fix: "the operator allows another with lockstep mcp --root DIR",
	}
}

// checkTargets refuses a plan with a step on a target not allowed, before
// anything runs. A plan that declares its own "local" with an ssh block
// would run elsewhere under an allowed name: it is refused too.
func (s *Server) checkTargets(p *plans.Plan) error {
	var bad []string
	for _, st := range p.Steps {
		name := st.Target
		if name == "" {
			name = plans.LocalTarget
		}
		t := p.Target(name)
		if name == plans.LocalTarget && t != nil && t.SSH != nil {
			return &RefusedError{Why: fmt.Sprintf("%s declares target %q with an ssh block: it would run elsewhere under the name of this machine", p.Filename, name), Fix: "rename the target"}
		}
		if !s.targets[name] && !slices.Contains(bad, name) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		allowed := make([]string, 0, len(s.targets))
		for t := range s.targets {
			allowed = append(allowed, t)
		}
		slices.Sort(allowed)
		return &RefusedError{
			Why: fmt.Sprintf("%s has steps on target %s, which this server may not use (allowed: %s); nothing was run", p.Filename, strings.Join(bad, ", "), strings.Join(allowed, ", ")),
			Fix: "the operator allows it with lockstep mcp --allow-targets " + strings.Join(append(allowed, bad...), ","),
		}
	}
	return nil
}

// recordsOf is where the attempts of the plan file at path are kept.
func (s *Server) recordsOf(path string) string { return records.Root(s.o.Records, path) }
