package runner

// Who answered: an http probe or a load to a loopback address of its
// target is told which process holds the listening socket it reached
// (targets.ListenerOf), and whether that process is of this attempt: one
// of its launches (started or adopted), or what a run step's command left
// running. Once the attempt has launched or adopted a server on that
// target, an answer from any other process is what --keep and a rerun
// used to hide (the old server benchmarked, confirmed): the evidence and
// the run's summary say so, and require_own (true unless the plan says
// otherwise) fails the step.

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/targets"
)

// answerCheck is what an http probe or a load needs told of who answered
// it: the loopback addresses its URL reaches, and whether it must be the
// attempt's own process.
type answerCheck struct {
	addrs      []netip.AddrPort
	requireOwn bool
}

// probeAnswer is the check of an http probe's config, nil for another
// probe.
func probeAnswer(cfg any) *answerCheck {
	h, ok := cfg.(*probes.HTTP)
	if !ok {
		return nil
	}
	return &answerCheck{addrs: loopbackAddrs(h.URL), requireOwn: h.RequireOwn}
}

// loopbackAddrs are the loopback addresses raw (a URL) reaches: none for
// a host that is not a loopback one. localhost is both 127.0.0.1 and ::1,
// as a resolver may give either.
func loopbackAddrs(raw string) []netip.AddrPort {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return nil
		}
		port = n
	}
	host := u.Hostname()
	if host == "localhost" {
		return []netip.AddrPort{
			netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)),
			netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port)),
		}
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Unmap().IsLoopback() {
		return nil
	}
	return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), uint16(port))}
}

// foreignError is an answer from a process that is not of the attempt,
// under require_own: waiting does not make it the attempt's own.
type foreignError struct{ msg string }

func (e *foreignError) Error() string   { return e.msg }
func (e *foreignError) Permanent() bool { return true }

// whoAnswered looks up who holds the socket the addresses reach, and
// whether it is of this attempt. ok is false when nothing listens there
// (the answer came from elsewhere, or the server is gone).
func (s *stepRun) whoAnswered(ctx context.Context, addrs []netip.AddrPort) (events.Served, bool) {
	for _, addr := range addrs {
		ans, err := targets.ListenerOf(ctx, unwrap(s.t), addr, s.r.launchPIDs(s.t.Name())...)
		if err != nil {
			return events.Served{Address: addr.String(), Error: s.r.guard.text(err.Error())}, true
		}
		if len(ans) == 0 {
			continue
		}
		// Forked workers share the socket: any of them of this attempt
		// makes the answer its own; otherwise the first (lowest pid,
		// the parent that made the socket).
		pick, step := ans[0], ""
		for _, an := range ans {
			if st := s.r.ownerOf(an, s.t.Name()); st != "" {
				pick, step = an, st
				break
			}
		}
		sv := events.Served{Address: pick.Address, PID: pick.PID, PGID: pick.PGID, Command: cut(s.r.guard.text(pick.Command), 200), Step: step}
		sv.Foreign = step == "" && len(s.r.launchPIDs(s.t.Name())) > 0
		return sv, true
	}
	return events.Served{}, false
}

// launchPIDs are the processes the attempt's launches on target are
// known by: the first looked at for who answers there.
func (r *run) launchPIDs(target string) []int {
	var out []int
	for _, l := range r.launches() {
		if l.target.Name() == target {
			out = append(out, l.current().PID, l.proc.PID)
		}
	}
	return out
}

// ownerOf is the step of this attempt the process on target belongs to:
// a launch (by its mark, its pid or its group) or a run that left it
// running (its mark); "" for none. Pids of another target are another
// machine's.
func (r *run) ownerOf(an targets.Answerer, target string) string {
	if an.PID == 0 {
		return "" // a process this user cannot see is none of the attempt's
	}
	for _, l := range r.launches() {
		if l.target.Name() != target {
			continue
		}
		cur := l.current()
		switch {
		case an.Mark != "" && an.Mark == l.proc.Mark,
			an.PID == cur.PID && (cur.StartTime == 0 || an.StartTime == cur.StartTime),
			l.proc.PGID > 0 && (an.PGID == l.proc.PGID || an.PGID == cur.PGID):
			return l.addr
		}
	}
	for _, lo := range r.leftovers() {
		if lo.target.Name() == target && an.Mark != "" && an.Mark == lo.owner.Mark {
			return lo.addr
		}
	}
	return ""
}

// servedValue is served_by as a plan reads it.
func servedValue(sv events.Served, ok bool) cty.Value {
	if !ok || sv.Error != "" {
		return cty.NullVal(probes.ServedType)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"pid":     cty.NumberIntVal(int64(sv.PID)),
		"pgid":    cty.NumberIntVal(int64(sv.PGID)),
		"command": cty.StringVal(sv.Command),
		"step":    cty.StringVal(sv.Step),
	})
}

// answered adds to an http probe's latest value who answered it, keeps
// that for the record, tells an answer that is not the attempt's own
// (once per probe and step), and under require_own fails the probe with
// it.
func (s *stepRun) answered(ctx context.Context, np namedProbe) {
	v := s.values[np.name]
	if np.answer == nil || v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() || !v.Type().IsObjectType() {
		return
	}
	vals := v.AsValueMap()
	sv, ok := events.Served{}, false
	if len(np.answer.addrs) > 0 {
		sv, ok = s.whoAnswered(ctx, np.answer.addrs)
	}
	vals["served_by"] = servedValue(sv, ok)
	s.values[np.name] = cty.ObjectVal(vals)
	if !ok {
		return
	}
	key := "probe." + np.name
	s.served[key] = sv
	if err := s.foreign(key, sv, np.answer.requireOwn); err != nil {
		s.values[np.name] = cty.DynamicVal
		s.errs[np.name] = err
	}
}

// answeredBefore tells, before a benchmark's load sends, who answers it
// (loadAnswered); done when that fails the step. A load that does not
// decode is left to the action to tell.
func (s *stepRun) answeredBefore(ctx context.Context) (events.Outcome, bool) {
	if s.st.Load == nil {
		return events.Outcome{}, false
	}
	l, err := (&stepEnv{s}).Load()
	if err != nil || l == nil {
		return events.Outcome{}, false
	}
	if err := s.loadAnswered(ctx, l.Config); err != nil {
		return events.Outcome{Status: events.Failed, Reason: s.inputs.text(err.Error()), Evidence: s.evidence(nil)}, true
	}
	return events.Outcome{}, false
}

// loadAnswered tells who answers a load's URL before the load is
// measured: under require_own, a load that would measure another
// process than the attempt's fails before it sends a request.
func (s *stepRun) loadAnswered(ctx context.Context, l loads.Config) error {
	a, ok := l.(loads.Answered)
	if !ok {
		return nil
	}
	u, requireOwn := a.Answered()
	addrs := loopbackAddrs(u)
	if len(addrs) == 0 {
		return nil
	}
	sv, found := s.whoAnswered(ctx, addrs)
	if !found {
		return nil
	}
	s.served["load"] = sv
	return s.foreign("load", sv, requireOwn)
}

// foreign tells an answer from a process not of this attempt: a warning
// once, the run's summary at its end, and under require_own the error
// that fails the step.
func (s *stepRun) foreign(key string, sv events.Served, requireOwn bool) error {
	if !sv.Foreign {
		return nil
	}
	what := fmt.Sprintf("%s was answered by pid %d (%s) listening on %s, which is not of this attempt", key, sv.PID, sv.Command, sv.Address)
	if sv.PID == 0 {
		what = fmt.Sprintf("%s was answered on %s by a process this user cannot see, which is not of this attempt", key, sv.Address)
	}
	if mine := s.r.launchList(); mine != "" {
		what += " (its launches: " + mine + ")"
	}
	s.r.noteForeign(s.ev.Addr+" "+key, sv)
	if requireOwn {
		return &foreignError{msg: what + "; require_own = false accepts it"}
	}
	if !s.foreignTold[key] {
		s.foreignTold[key] = true
		s.r.emit(events.Event{Type: events.Warning, Step: &s.ev, Message: what})
	}
	return nil
}

// launchList names the attempt's launches and their pids.
func (r *run) launchList() string {
	out := ""
	for i, l := range r.launches() {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s pid %d", l.addr, l.current().PID)
	}
	return out
}

// noteForeign keeps an answer not of this attempt for the run's summary.
func (r *run) noteForeign(key string, sv events.Served) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.foreign == nil {
		r.foreign = map[string]events.Served{}
	}
	r.foreign[key] = sv
}
