package loads

import (
	"context"
	"net"
	"strings"
	"testing"
)

// The client must not allocate per request: at tens of thousands of
// requests a second, garbage collection would cost the generator the
// throughput it measures.
func TestClientDoesNotAllocatePerRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	response := []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			// Each request arrives in one write and fits the buffer.
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(response); err != nil {
				return
			}
		}
	}()
	w, err := newWire("http://"+l.Addr().String()+"/x", "GET", map[string]string{"Accept": "*/*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient1(context.Background(), w, Dialer(nil).orDefault(), HTTPDefaults().Timeout)
	defer c.close()
	if status, err := c.do(); err != nil || status != 200 {
		t.Fatalf("do = %d, %v", status, err)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := c.do(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.1 {
		t.Errorf("%.2f allocations per request, want none", allocs)
	}
}

func TestParseHexAndFold(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "a": 10, "FF": 255, "1f4": 500} {
		if got, err := parseHex([]byte(in)); err != nil || got != want {
			t.Errorf("parseHex(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "g", "-1", "1234567890abcdef0"} {
		if _, err := parseHex([]byte(bad)); err == nil {
			t.Errorf("parseHex(%q) did not fail", bad)
		}
	}
	var got []string
	for tok, rest := nextToken([]byte(" gzip ,, chunked,\t")); len(tok) > 0; tok, rest = nextToken(rest) {
		got = append(got, string(tok))
	}
	if strings.Join(got, "|") != "gzip|chunked" {
		t.Errorf("nextToken split %q", got)
	}
}

// BenchmarkClientRequest is one keep-alive request and its response
// through the client, against a server that answers from memory: the cost
// the client adds per request (syscalls included).
func BenchmarkClientRequest(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	response := []byte("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 01 Dec 2026 09:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 12\r\nConnection: keep-alive\r\nETag: \"5f-1\"\r\nAccept-Ranges: bytes\r\n\r\nhello world\n")
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(response); err != nil {
				return
			}
		}
	}()
	w, err := newWire("http://"+l.Addr().String()+"/x", "GET", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := newClient1(context.Background(), w, Dialer(nil).orDefault(), HTTPDefaults().Timeout)
	defer c.close()
	b.ReportAllocs()
	for b.Loop() {
		if status, err := c.do(); err != nil || status != 200 {
			b.Fatalf("do = %d, %v", status, err)
		}
	}
}
