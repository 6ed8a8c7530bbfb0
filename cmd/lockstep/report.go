package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"lockstep/plans"
	"lockstep/runner/records"
	"lockstep/views"
)

const reportUsage = `usage: lockstep report [flags] [PLAN]

A report of a plan's attempts: the table of attempts, each key metric
across them, the latency distributions the benchmarks measured, and where
each attempt's time went. HTML is one self-contained page with its charts
inline (it reads offline); Markdown is its tables, for a pull request.

PLAN is a plan file or a plan's name; with one plan in the records, it may
be left out.

flags:
  -o FILE                  where to write it (default: standard output)
  --format html|markdown   (default html)
  --metrics a,b,c          the metrics to follow across attempts (default:
                           the key metrics of lockstep attempts)
  --records DIR            where records are kept (default: .lockstep
                           beside the plan, or $LOCKSTEP_RECORDS)

examples:
  lockstep report examples/quickstart.hcl -o report.html
  lockstep report glm5 --format markdown
`

// reportArgs is the report command line, parsed with no I/O.
type reportArgs struct {
	plan, out, format, records string
	metrics                    []string
}

func reportCmd(args []string, stdout, stderr io.Writer) int {
	a, err := parseReport(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, reportUsage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, err.Error(), "run 'lockstep report -h' for usage")
	}
	out, err := runReport(a)
	var ue attemptsUsageError
	if errors.As(err, &ue) {
		return usageError(stderr, err.Error(), "lockstep attempts PLAN lists what each attempt measured")
	}
	if err != nil {
		errorf(stderr, "%v", err)
		return exitFailed
	}
	if a.out == "" {
		_, err = stdout.Write(out)
	} else {
		err = writeFileAtomic(a.out, out, permOf(a.out, 0o644))
	}
	if err != nil {
		errorf(stderr, "report: %v", err)
		return exitFailed
	}
	return exitOK
}

func parseReport(args []string) (reportArgs, error) {
	var a reportArgs
	var metrics string
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.out, "o", "", "")
	fs.StringVar(&a.format, "format", "html", "")
	fs.StringVar(&a.records, "records", "", "")
	fs.StringVar(&metrics, "metrics", "", "")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return a, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(pos) {
	case 0:
	case 1:
		a.plan = pos[0]
	default:
		return a, fmt.Errorf("unexpected arguments: %s", strings.Join(pos[1:], " "))
	}
	switch a.format {
	case "html", "markdown", "md":
	default:
		return a, fmt.Errorf("unknown format %q (want html or markdown)", a.format)
	}
	a.metrics = metricList(metrics)
	return a, nil
}

func runReport(a reportArgs) ([]byte, error) {
	root, plan, err := resolvePlan(a.records, a.plan, true)
	if err != nil {
		return nil, err
	}
	atts, err := records.List(root, plan)
	if err != nil {
		return nil, err
	}
	if len(atts) == 0 {
		return nil, fmt.Errorf("no attempts of %s to report (records: %s%s)", plan, root, whereToLook(a.records))
	}
	if err := knownMetrics(atts, plan, a.metrics); err != nil {
		return nil, err
	}
	r := records.BuildReport(atts, a.metrics)
	if a.format == "html" {
		return views.ReportHTML(r, time.Now())
	}
	s, err := views.ReportMarkdown(r)
	return []byte(s), err
}

// metricList reads a --metrics flag: labels separated by commas; nil when
// none are given.
func metricList(flag string) []string {
	var out []string
	for _, m := range strings.Split(flag, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// knownMetrics refuses a metric label no attempt of plan measured, with a
// did-you-mean: a usage error.
func knownMetrics(atts []*records.Attempt, plan string, want []string) error {
	var known []string
	for _, m := range records.MetricsOf(atts) {
		known = append(known, m.Label)
	}
	for _, m := range want {
		if !slices.Contains(known, m) {
			hint := ""
			if s := plans.Suggest(m, known); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			return usagef("no attempt of %s measured %q%s", plan, m, hint)
		}
	}
	return nil
}
