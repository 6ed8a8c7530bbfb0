// Command loadgen runs lockstep's HTTP load (loads.HTTP) from flags and
// prints its metrics as JSON, with -cpuprofile to see where the load
// generator spends its CPU when bench/http-load.sh shows it behind wrk.
// The bench itself runs the load as users do, through `lockstep run` and
// bench/http-load.hcl; this command is only for profiling the same code
// without the runner around it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"

	"lockstep/loads"
)

func main() {
	var h loads.HTTP
	flag.StringVar(&h.URL, "url", "", "URL to load")
	flag.StringVar(&h.Method, "method", "", "request method (default GET)")
	flag.IntVar(&h.Concurrency, "c", 0, "connections (closed model) or in-flight cap (open model)")
	flag.Float64Var(&h.Rate, "rate", 0, "arrivals per second; 0 for a closed model")
	flag.DurationVar(&h.Duration, "d", 0, "measured duration")
	flag.IntVar(&h.Requests, "n", 0, "measured requests")
	flag.DurationVar(&h.Warmup, "warmup", 0, "warm-up, not measured")
	flag.DurationVar(&h.Timeout, "timeout", 0, "per-request timeout")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := h.Run(ctx, nil, nil)
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if res.Metrics != nil {
		out.Encode(res)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
