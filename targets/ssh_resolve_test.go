package targets

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const testSSHConfig = `Host gpu
  HostName 10.1.2.3
  User alice
  Port 2222
  IdentityFile ~/.ssh/gpu_key
  IdentityFile %d/keys/%r@%h
  ProxyJump bastion.example,jump2:2200
  UserKnownHostsFile ~/known/%h
  ConnectTimeout 7
  ServerAliveInterval 11
  ServerAliveCountMax 4

Host plain
  HostName 10.9.9.9

Host proxied
  ProxyCommand ssh -W %h:%p bastion

Match host 10.9.9.9
  User matched
`

func testResolver(t *testing.T, ssh string) resolver {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config")
	if err := os.WriteFile(cfg, []byte(testSSHConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return resolver{ssh: ssh, configFile: cfg, home: home, localUser: "me"}
}

func TestResolveSSH(t *testing.T) {
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the OpenSSH client is missing: apt-get install openssh-client")
		}
		t.Log("no OpenSSH client: testing only the ssh_config fallback")
	}
	methods := map[string]string{ResolvedByConfigFile: ""}
	if sshPath != "" {
		methods[ResolvedBySSH] = sshPath
	}
	for method, bin := range methods {
		t.Run(method, func(t *testing.T) {
			r := testResolver(t, bin)
			ctx := context.Background()

			got, res, err := r.resolve(ctx, "gpu", SSHConfig{Host: "gpu"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Method != method {
				t.Errorf("method %q, want %q", res.Method, method)
			}
			if (res.Limits == "") != (method == ResolvedBySSH) {
				t.Errorf("limits %q: only the fallback has any", res.Limits)
			}
			if got.Host != "10.1.2.3" || got.User != "alice" || got.Port != 2222 {
				t.Errorf("host %s@%s:%d, want alice@10.1.2.3:2222", got.User, got.Host, got.Port)
			}
			wantKeys := []string{r.home + "/.ssh/gpu_key", r.home + "/keys/alice@10.1.2.3"}
			if len(got.IdentityFiles) < 2 || !slices.Equal(got.IdentityFiles[:2], wantKeys) {
				t.Errorf("identity files %q, want first %q", got.IdentityFiles, wantKeys)
			}
			if got.ProxyJump != "bastion.example,jump2:2200" {
				t.Errorf("proxy jump %q", got.ProxyJump)
			}
			// ssh -G expands ~ itself, with the real home.
			if len(got.KnownHosts) == 0 || !strings.HasSuffix(got.KnownHosts[0], "/known/10.1.2.3") {
				t.Errorf("known hosts %q", got.KnownHosts)
			}
			if got.ConnectTimeout != 7*time.Second || got.KeepaliveInterval != 11*time.Second || got.KeepaliveMax != 4 {
				t.Errorf("timeouts %s %s %d", got.ConnectTimeout, got.KeepaliveInterval, got.KeepaliveMax)
			}

			// The plan wins over the configuration.
			plan := SSHConfig{Host: "gpu", User: "root", Port: 22, IdentityFiles: []string{"/plan/key"}, ProxyJump: "none-of-that", KeepaliveInterval: time.Second}
			got, _, err = r.resolve(ctx, "gpu", plan)
			if err != nil {
				t.Fatal(err)
			}
			if got.User != "root" || got.Port != 22 || !slices.Equal(got.IdentityFiles, []string{"/plan/key"}) ||
				got.ProxyJump != "none-of-that" || got.KeepaliveInterval != time.Second || got.Host != "10.1.2.3" {
				t.Errorf("plan overrides lost: %+v", got)
			}

			// user@host:port in the host, and the target's name as the host.
			got, _, err = r.resolve(ctx, "unlisted", SSHConfig{Host: "bob@unlisted.example:2022"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Host != "unlisted.example" || got.User != "bob" || got.Port != 2022 {
				t.Errorf("user@host:port: %+v", got)
			}
			got, _, err = r.resolve(ctx, "gpu", SSHConfig{})
			if err != nil || got.Host != "10.1.2.3" {
				t.Errorf("the target's name as the host: %+v, %v", got, err)
			}

			// ProxyCommand is refused, unless the plan says how to jump.
			_, _, err = r.resolve(ctx, "proxied", SSHConfig{Host: "proxied"})
			if err == nil || !strings.Contains(err.Error(), "ProxyCommand") || !strings.Contains(err.Error(), "proxy_jump") {
				t.Errorf("ProxyCommand: err = %v", err)
			}
			if _, _, err = r.resolve(ctx, "proxied", SSHConfig{Host: "proxied", ProxyJump: "bastion"}); err != nil {
				t.Errorf("ProxyCommand with the plan's proxy_jump: %v", err)
			}

			// Match blocks: only ssh -G evaluates them.
			got, _, err = r.resolve(ctx, "plain", SSHConfig{Host: "plain"})
			if err != nil {
				t.Fatal(err)
			}
			if method == ResolvedBySSH && got.User != "matched" {
				t.Errorf("ssh -G user %q, want the Match block's", got.User)
			}
			if method == ResolvedByConfigFile && !strings.Contains(res.Limits, "Match") {
				t.Errorf("the fallback's limits %q do not mention Match", res.Limits)
			}
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in   string
		want endpoint
		bad  bool
	}{
		{in: "host", want: endpoint{host: "host"}},
		{in: "u@host", want: endpoint{user: "u", host: "host"}},
		{in: "u@host:2200", want: endpoint{user: "u", host: "host", port: 2200}},
		{in: "[::1]:2200", want: endpoint{host: "::1", port: 2200}},
		{in: "::1", want: endpoint{host: "::1"}},
		{in: "user@[fe80::1]", want: endpoint{user: "user", host: "fe80::1"}},
		{in: "ssh://u@h:7", want: endpoint{user: "u", host: "h", port: 7}},
		{in: "host:port", bad: true},
		{in: "host:0", bad: true},
		{in: "u@", bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		got, err := parseEndpoint(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `a"b`, "$HOME `x` \\ \n !", "''"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh printed %q for %q (%v)", out, s, err)
		}
	}
}
