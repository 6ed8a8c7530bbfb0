package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"lockstep/plans"
	"lockstep/runner/records"
	"lockstep/views"
)

const attemptsUsage = `usage: lockstep attempts [flags] [PLAN]           the table of attempts
       lockstep attempts show N [flags] [PLAN]    one attempt, whole
       lockstep attempts diff A B [flags] [PLAN]  what changed from A to B

PLAN is a plan file or a plan's name; with one plan in the records, it may
be left out. N may be "last".

flags:
  --format text|markdown|json   (show also takes junit)
  --metrics a,b,c               the table's metric columns (default: the
                                key metrics: throughputs, p99s, errors)
  --records DIR                 where records are kept (default: .lockstep
                                beside the plan, or $LOCKSTEP_RECORDS)

examples:
  lockstep attempts examples/quickstart.hcl
  lockstep attempts show last examples/quickstart.hcl
  lockstep attempts diff 3 4 glm5 --format markdown
`

// attemptsUsageError is a mistake in the command line: exit status 2.
type attemptsUsageError struct{ msg string }

func (e attemptsUsageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return attemptsUsageError{fmt.Sprintf(format, args...)}
}

// attemptsArgs is the attempts command line, parsed with no I/O.
type attemptsArgs struct {
	verb    string // "", "show", "diff"
	numbers []string
	plan    string
	format  string       // as given: a views.Format, or junit
	view    views.Format // format, unless junit
	records string
	metrics []string // the table's metric columns; nil: the key metrics
}

// attemptsCmd runs `lockstep attempts ARGS...` and returns the exit status.
func attemptsCmd(args []string, stdout, stderr io.Writer) int {
	a, err := parseAttempts(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, attemptsUsage)
		return 0
	}
	if err == nil {
		var out string
		out, err = runAttempts(a)
		if err == nil {
			io.WriteString(stdout, out)
			return 0
		}
	}
	errorf(stderr, "%v", err)
	var ue attemptsUsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "run 'lockstep attempts -h' for usage\n")
		return 2
	}
	return 1
}

// parseAttempts reads flags wherever they stand among the arguments, so
// that `attempts show 3 --format json` works as well as the flags first.
func parseAttempts(args []string) (attemptsArgs, error) {
	var a attemptsArgs
	fs := flag.NewFlagSet("attempts", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.format, "format", "text", "")
	fs.StringVar(&a.records, "records", "", "")
	var metrics string
	fs.StringVar(&metrics, "metrics", "", "")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return a, err
			}
			return a, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	a.metrics = metricList(metrics)
	if len(pos) > 0 && (pos[0] == "show" || pos[0] == "diff") {
		a.verb, pos = pos[0], pos[1:]
	}
	want := map[string]int{"": 0, "show": 1, "diff": 2}[a.verb]
	if len(pos) < want {
		return a, usagef("attempts %s needs %d attempt number%s", a.verb, want, map[bool]string{true: "s"}[want > 1])
	}
	a.numbers, pos = pos[:want], pos[want:]
	for _, n := range a.numbers {
		if n != "last" {
			if v, err := strconv.Atoi(n); err != nil || v < 1 {
				return a, usagef("%q is not an attempt number", n)
			}
		}
	}
	switch len(pos) {
	case 0:
	case 1:
		a.plan = pos[0]
	default:
		return a, usagef("unexpected arguments: %s", strings.Join(pos[1:], " "))
	}
	if a.format == "junit" {
		if a.verb != "show" {
			return a, usagef("--format junit is for attempts show")
		}
		return a, nil
	}
	view, err := views.ParseFormat(a.format)
	if err != nil || a.format == "md" || a.format == "" {
		return a, usagef("unknown format %q (want text, markdown or json)", a.format)
	}
	a.view = view
	return a, nil
}

func runAttempts(a attemptsArgs) (string, error) {
	root, plan, err := resolvePlan(a.records, a.plan, a.verb != "")
	if err != nil {
		return "", err
	}
	if a.verb == "" {
		atts, err := records.List(root, plan)
		if err != nil {
			return "", err
		}
		if len(atts) == 0 && a.view != views.JSON {
			return fmt.Sprintf("no attempts yet (records: %s%s)\n", root, whereToLook(a.records)), nil
		}
		if err := knownMetrics(atts, plan, a.metrics); err != nil {
			return "", err
		}
		return views.Attempts(records.Tables(atts, a.metrics), a.view)
	}
	var atts []*records.Attempt
	for _, n := range a.numbers {
		att, err := loadAttempt(root, plan, n)
		if err != nil {
			return "", err
		}
		atts = append(atts, att)
	}
	if a.verb == "diff" {
		return views.AttemptDiff(atts[0], atts[1], a.view)
	}
	if a.format == "junit" {
		var b bytes.Buffer
		err := views.JUnit(&b, atts[0])
		return b.String(), err
	}
	return views.Show(atts[0], a.view)
}

// resolvePlan finds the records root and the plan's name from the PLAN
// argument: a plan file (its plan block's label, records beside it) or a
// plan's name. Without it, one must be the only plan with attempts, when
// one is needed.
func resolvePlan(override, arg string, needOne bool) (root, plan string, err error) {
	if arg != "" {
		if info, err := os.Stat(arg); err == nil && !info.IsDir() {
			name, err := plans.NameOf(arg)
			if err != nil {
				return "", "", err
			}
			return records.Root(override, arg), name, nil
		}
	}
	root = records.Root(override, "")
	plans, err := records.Plans(root)
	if err != nil {
		return "", "", err
	}
	if len(plans) == 0 && override == "" && os.Getenv(records.EnvRoot) == "" {
		// None here: records are kept beside their plans, maybe below.
		if root, plans, err = recordsBelow(arg); err != nil {
			return "", "", err
		}
	}
	if arg != "" {
		for _, p := range plans {
			if p == arg {
				return root, arg, nil
			}
		}
		if len(plans) == 0 {
			return "", "", fmt.Errorf("%s is neither a plan file nor a plan with attempts (no records in %s%s)", arg, root, whereToLook(override))
		}
		return "", "", fmt.Errorf("%s is neither a plan file nor a plan with attempts in %s (plans: %s)", arg, root, strings.Join(plans, ", "))
	}
	if !needOne {
		return root, "", nil
	}
	switch len(plans) {
	case 0:
		return "", "", fmt.Errorf("no attempts yet (records: %s%s)", root, whereToLook(override))
	case 1:
		return root, plans[0], nil
	}
	return "", "", usagef("several plans have attempts (%s): name one", strings.Join(plans, ", "))
}

// recordsBelow looks for records in the folders below this one, for
// `lockstep attempts` run above the plans' folders: one records folder
// (or, with a plan named, one holding that plan) is used; several are
// listed, to say where to look.
func recordsBelow(plan string) (root string, plans []string, err error) {
	here := records.Root("", "")
	var roots []string
	var listed []string
	for _, r := range records.Find(".") {
		ps, err := records.Plans(r)
		if err != nil || len(ps) == 0 {
			continue
		}
		if plan == "" || slices.Contains(ps, plan) {
			roots = append(roots, r)
			listed = append(listed, fmt.Sprintf("%s (plans: %s)", r, strings.Join(ps, ", ")))
		}
	}
	switch len(roots) {
	case 0:
		return here, nil, nil
	case 1:
		ps, err := records.Plans(roots[0])
		return roots[0], ps, err
	}
	return "", nil, fmt.Errorf("no records in %s, and several below: %s; name a plan file, or give --records DIR", here, strings.Join(listed, ", "))
}

// whereToLook says, when the records searched were the default ones, that
// none were found below either and where records are kept.
func whereToLook(override string) string {
	if override != "" || os.Getenv(records.EnvRoot) != "" {
		return ""
	}
	return ", nor in the folders below; records are kept beside each plan: name a plan file, or give --records DIR"
}

// loadAttempt loads attempt n ("last" for the latest) of plan.
func loadAttempt(root, plan, n string) (*records.Attempt, error) {
	nums, err := records.Numbers(root, plan)
	if err != nil {
		return nil, err
	}
	if len(nums) == 0 {
		return nil, fmt.Errorf("plan %s has no attempts yet (records: %s)", plan, root)
	}
	num := nums[len(nums)-1]
	if n != "last" {
		num, _ = strconv.Atoi(n)
		found := false
		for _, x := range nums {
			found = found || x == num
		}
		if !found {
			return nil, fmt.Errorf("plan %s has no attempt %d (attempts: %s)", plan, num, spans(nums))
		}
	}
	return records.Load(records.AttemptDir(root, plan, num))
}

// spans renders sorted numbers as "1-4, 6".
func spans(nums []int) string {
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", nums[i], nums[j]))
		} else {
			parts = append(parts, strconv.Itoa(nums[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
