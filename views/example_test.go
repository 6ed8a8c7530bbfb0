package views_test

import (
	"fmt"
	"time"

	"lockstep/runner/records"
	"lockstep/views"
)

// `lockstep attempts` reads the records back as data (records.Tables)
// and renders the table of attempts.
func ExampleAttempts() {
	started := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	tables := []records.Table{{Plan: "web", KeyMetrics: []string{"requests_per_s"}, Rows: []records.Row{
		{Plan: "web", Attempt: 1, Started: started, Duration: time.Second, Status: "failed",
			FailedStep: "run.smoke", Why: "the smoke test failed", Note: "first try"},
		{Plan: "web", Attempt: 2, Started: started.Add(time.Hour), Duration: 61 * time.Second, Status: "confirmed",
			Changed: map[string]string{"workers": "8"}, Metrics: map[string]float64{"requests_per_s": 1234.56}},
	}}}
	table, _ := views.Attempts(tables, views.Text)
	fmt.Print(table)
	// Output:
	// web: 2 attempts
	// #  when              took  changed    outcome    failed step  why                    note       requests_per_s
	// 1  2026-11-30 01:00    1s             failed     run.smoke    the smoke test failed  first try
	// 2  2026-11-30 02:00  1m1s  workers=8  confirmed                                                         1234.6
}
