package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"lockstep/loads/loadtest"
)

// rawHTTPModes are the raw test server's behaviours, by name: what a
// misbehaving server sends, reply after reply (loadtest.Raw).
func rawHTTPModes() map[string][]loadtest.Reply {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	return map[string][]loadtest.Reply{
		"ok": {{Send: ok}},
		// Reads each request and never answers.
		"stall": {{}},
		// One good answer, then a status line that is not HTTP/1.1's, a
		// body cut short by a close, and two Content-Length that differ.
		"mixed": {
			{Send: ok},
			{Send: "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"},
			{Send: "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello", Close: true},
			{Send: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"},
		},
	}
}

// rawHTTPMain is the rawhttp command of the scripts: a loadtest.Raw server
// on 127.0.0.1:--port that says what it saw when it is stopped.
func rawHTTPMain() int {
	fs := flag.NewFlagSet("rawhttp", flag.ContinueOnError)
	port := fs.Int("port", 0, "port to listen on")
	mode := fs.String("mode", "ok", "behaviour")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	modes := rawHTTPModes()
	replies, ok := modes[*mode]
	if !ok {
		names := make([]string, 0, len(modes))
		for name := range modes {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "rawhttp: unknown mode %q (%s)\n", *mode, strings.Join(names, ", "))
		return 2
	}
	srv, err := loadtest.NewRaw(fmt.Sprintf("127.0.0.1:%d", *port), replies...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawhttp:", err)
		return 1
	}
	fmt.Printf("rawhttp: listening on %s\n", srv.Addr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	srv.Close()
	c := srv.Counts()
	fmt.Printf("rawhttp: accepted=%d requests=%d answered=%d read=%d written=%d\n", c.Accepted, c.Requests, c.Answered, c.Read, c.Written)
	return 0
}
