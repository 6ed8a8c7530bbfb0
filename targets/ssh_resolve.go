package targets

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
)

// SSHConfig is how to reach an SSH target. Zero fields mean "as OpenSSH
// would": ResolveSSH fills them from the user's ssh configuration, and
// NewSSH fills what is still empty with OpenSSH's defaults.
type SSHConfig struct {
	Host          string   // a name from ~/.ssh/config, a host name or an address; "user@host:port" is accepted
	User          string   // default: ssh's (the config's, else the local user)
	Port          int      // default 22
	IdentityFiles []string // default: ~/.ssh/id_ed25519, id_ecdsa, id_rsa
	KnownHosts    []string // default: ~/.ssh/known_hosts (+ /etc/ssh/ssh_known_hosts)
	// ProxyJump is a chain of hops, "a,b", each [user@]host[:port],
	// connected through in order, as ssh -J.
	ProxyJump string
	// PassphraseEnv names the environment variable holding the passphrase
	// of encrypted identity files.
	PassphraseEnv string
	// InsecureIgnoreHostKey accepts any host key. The runner must warn on
	// every run that uses it.
	InsecureIgnoreHostKey bool
	ConnectTimeout        time.Duration // per hop, TCP and handshake; default 15s
	KeepaliveInterval     time.Duration // default 5s; negative turns keepalives off
	KeepaliveMax          int           // missed replies before the connection counts as dropped; default 3
	Env                   map[string]string
	Workdir               string
}

// How ResolveSSH read the user's configuration.
const (
	ResolvedBySSH        = "ssh -G"     // the OpenSSH client itself: Include, Match, tokens, all of it
	ResolvedByConfigFile = "ssh_config" // ~/.ssh/config and /etc/ssh/ssh_config parsed by lockstep
)

// Resolution says how ResolveSSH filled a target's settings, so the runner
// can show it (and what the fallback could not do).
type Resolution struct {
	Method string // ResolvedBySSH or ResolvedByConfigFile
	Source string // the command run or the files read
	// Limits is what the method cannot resolve; empty for ssh -G.
	Limits string
}

func (r Resolution) String() string {
	s := fmt.Sprintf("resolved with %s (%s)", r.Method, r.Source)
	if r.Limits != "" {
		s += "; " + r.Limits
	}
	return s
}

// configFileLimits is what the ssh_config fallback does not do.
const configFileLimits = "without the OpenSSH client: Match blocks are not evaluated, CanonicalizeHostname and HostKeyAlias are ignored, and only the %d %h %p %r %u %% tokens are expanded; install openssh-client for exact resolution"

// ResolveSSH fills what plan leaves empty (host name, user, port, identity
// files, proxy jump, known_hosts files, connect timeout, keepalives) the
// way OpenSSH would for plan.Host (the target's name when empty): with
// `ssh -G` when the OpenSSH client is installed, which alone resolves
// Include and Match, else by parsing ~/.ssh/config and
// /etc/ssh/ssh_config. What the plan sets wins.
func ResolveSSH(name string, plan SSHConfig) (SSHConfig, Resolution, error) {
	return defaultResolver().resolve(context.Background(), name, plan)
}

// resolver is how host settings are read; tests point it at their own
// config file.
type resolver struct {
	ssh        string   // path of the ssh client; "" means parse files
	configFile string   // -F for ssh; the only file for the fallback; "" means the usual ones
	home       string   // for ~
	localUser  string   // %u and the default user
	sysFiles   []string // the fallback's system config files
}

func defaultResolver() resolver {
	r := resolver{sysFiles: []string{"/etc/ssh/ssh_config"}}
	r.ssh, _ = exec.LookPath("ssh")
	r.home, _ = os.UserHomeDir()
	if u, err := user.Current(); err == nil {
		r.localUser = u.Username
		if r.home == "" {
			r.home = u.HomeDir
		}
	}
	return r
}

func (r resolver) resolve(ctx context.Context, name string, plan SSHConfig) (SSHConfig, Resolution, error) {
	alias := plan.Host
	if alias == "" {
		alias = name
	}
	ep, err := parseEndpoint(alias)
	if err != nil {
		return plan, Resolution{}, fmt.Errorf("target %s: %w", name, err)
	}
	if plan.User == "" {
		plan.User = ep.user
	}
	if plan.Port == 0 {
		plan.Port = ep.port
	}
	var got hostSettings
	var res Resolution
	if r.ssh != "" {
		got, res, err = r.byClient(ctx, ep.host, plan.User, plan.Port)
	} else {
		got, res, err = r.byFile(ep.host)
	}
	if err != nil {
		return plan, res, fmt.Errorf("target %s: resolve ssh settings for %s: %w", name, ep.host, err)
	}
	if got.proxyCommand != "" && plan.ProxyJump == "" {
		// Connecting directly where ssh would go through a proxy could
		// reach another host, or nothing.
		return plan, res, fmt.Errorf("target %s: the ssh configuration for %s uses ProxyCommand %q, which lockstep does not run; "+
			"use ProxyJump in ~/.ssh/config, or set proxy_jump in the target's ssh block", name, ep.host, got.proxyCommand)
	}
	out := plan
	out.Host = got.hostName
	if out.Host == "" {
		out.Host = ep.host
	}
	if out.User == "" {
		out.User = got.user
	}
	if out.Port == 0 {
		out.Port = got.port
	}
	if len(out.IdentityFiles) == 0 {
		out.IdentityFiles = got.identityFiles
	}
	if len(out.KnownHosts) == 0 {
		out.KnownHosts = got.knownHosts
	}
	if out.ProxyJump == "" {
		out.ProxyJump = got.proxyJump
	}
	if out.ConnectTimeout == 0 {
		out.ConnectTimeout = got.connectTimeout
	}
	if out.KeepaliveInterval == 0 {
		out.KeepaliveInterval = got.keepaliveInterval
	}
	if out.KeepaliveMax == 0 {
		out.KeepaliveMax = got.keepaliveMax
	}
	out.IdentityFiles = r.expandAll(out.IdentityFiles, out)
	out.KnownHosts = r.expandAll(out.KnownHosts, out)
	return out, res, nil
}

// hostSettings is what ssh's configuration says about one host.
type hostSettings struct {
	hostName, user    string
	port              int
	identityFiles     []string
	knownHosts        []string
	proxyJump         string
	proxyCommand      string
	connectTimeout    time.Duration
	keepaliveInterval time.Duration
	keepaliveMax      int
}

// byClient asks the OpenSSH client what it would use: `ssh -G` prints the
// final settings after Include, Match and every default.
func (r resolver) byClient(ctx context.Context, host, user string, port int) (hostSettings, Resolution, error) {
	args := []string{"-G"}
	if r.configFile != "" {
		args = append(args, "-F", r.configFile)
	}
	if user != "" {
		args = append(args, "-l", user)
	}
	if port != 0 {
		args = append(args, "-p", strconv.Itoa(port))
	}
	// "--" so that a host starting with "-" is not taken for an option.
	args = append(args, "--", host)
	res := Resolution{Method: ResolvedBySSH, Source: r.ssh + " " + strings.Join(args, " ")}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.ssh, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = nil
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := startUnmarked(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	out := stdout.Bytes()
	if err != nil {
		return hostSettings{}, res, fmt.Errorf("%s: %w: %s", res.Source, err, strings.TrimSpace(stderr.String()))
	}
	var h hostSettings
	var global []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "hostname":
			h.hostName = val
		case "user":
			h.user = val
		case "port":
			h.port, _ = strconv.Atoi(val)
		case "identityfile":
			h.identityFiles = append(h.identityFiles, val)
		case "userknownhostsfile":
			h.knownHosts = append(h.knownHosts, strings.Fields(val)...)
		case "globalknownhostsfile":
			global = append(global, strings.Fields(val)...)
		case "proxyjump":
			if val != "none" {
				h.proxyJump = val
			}
		case "proxycommand":
			if val != "none" {
				h.proxyCommand = val
			}
		case "connecttimeout":
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				h.connectTimeout = time.Duration(n) * time.Second
			}
		case "serveraliveinterval":
			// 0 is OpenSSH's "off"; lockstep keeps its own default then,
			// since a silently dropped connection must be noticed.
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				h.keepaliveInterval = time.Duration(n) * time.Second
			}
		case "serveralivecountmax":
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				h.keepaliveMax = n
			}
		}
	}
	// The user's files first: ssh-keyscan hints name the first one.
	h.knownHosts = append(h.knownHosts, global...)
	return h, res, nil
}

// byFile reads the ssh configuration files with kevinburke/ssh_config, for
// machines without the OpenSSH client.
func (r resolver) byFile(host string) (hostSettings, Resolution, error) {
	files := []string{r.configFile}
	if r.configFile == "" {
		files = append([]string{filepath.Join(r.home, ".ssh", "config")}, r.sysFiles...)
	}
	res := Resolution{Method: ResolvedByConfigFile, Limits: configFileLimits}
	var cfgs []*ssh_config.Config
	var read []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return hostSettings{}, res, err
		}
		c, err := ssh_config.DecodeBytes(b)
		if err != nil {
			return hostSettings{}, res, fmt.Errorf("%s: %w", f, err)
		}
		cfgs = append(cfgs, c)
		read = append(read, f)
	}
	res.Source = strings.Join(read, ", ")
	if res.Source == "" {
		res.Source = "no config file"
	}
	// The first value found wins, as in ssh; the user's file comes first.
	get := func(key string) string {
		for _, c := range cfgs {
			if v, err := c.Get(host, key); err == nil && v != "" {
				return v
			}
		}
		return ""
	}
	getAll := func(key string) []string {
		var all []string
		for _, c := range cfgs {
			if v, err := c.GetAll(host, key); err == nil {
				all = append(all, v...)
			}
		}
		return all
	}
	h := hostSettings{
		hostName:      get("HostName"),
		user:          get("User"),
		identityFiles: getAll("IdentityFile"),
		proxyJump:     get("ProxyJump"),
	}
	if h.proxyJump == "none" {
		h.proxyJump = ""
	}
	if h.proxyCommand = get("ProxyCommand"); h.proxyCommand == "none" {
		h.proxyCommand = ""
	}
	if p := get("Port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return h, res, fmt.Errorf("port %q: %w", p, err)
		}
		h.port = n
	}
	// As ssh: the user's files (default ~/.ssh/known_hosts), then the
	// system's.
	userKnown, globalKnown := get("UserKnownHostsFile"), get("GlobalKnownHostsFile")
	if userKnown == "" {
		userKnown = "~/.ssh/known_hosts"
	}
	if globalKnown == "" {
		globalKnown = "/etc/ssh/ssh_known_hosts"
	}
	h.knownHosts = append(strings.Fields(userKnown), strings.Fields(globalKnown)...)
	if n, err := strconv.Atoi(get("ConnectTimeout")); err == nil && n > 0 {
		h.connectTimeout = time.Duration(n) * time.Second
	}
	if n, err := strconv.Atoi(get("ServerAliveInterval")); err == nil && n > 0 {
		h.keepaliveInterval = time.Duration(n) * time.Second
	}
	if n, err := strconv.Atoi(get("ServerAliveCountMax")); err == nil && n > 0 {
		h.keepaliveMax = n
	}
	if strings.Contains(h.hostName, "%h") {
		h.hostName = strings.ReplaceAll(h.hostName, "%h", host)
	}
	return h, res, nil
}

func (r resolver) expandAll(paths []string, cfg SSHConfig) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, r.expand(p, cfg))
	}
	return out
}

// expand resolves ~ and the %-tokens ssh allows in IdentityFile and
// UserKnownHostsFile; ssh -G prints them unexpanded.
func (r resolver) expand(p string, cfg SSHConfig) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = r.home + p[1:]
	}
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case '%':
			b.WriteByte('%')
		case 'd':
			b.WriteString(r.home)
		case 'h':
			b.WriteString(cfg.Host)
		case 'p':
			b.WriteString(strconv.Itoa(cfg.Port))
		case 'r':
			b.WriteString(cfg.User)
		case 'u':
			b.WriteString(r.localUser)
		default:
			b.WriteByte('%')
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// endpoint is one "[user@]host[:port]" as ssh -J and ProxyJump write it.
type endpoint struct {
	user, host string
	port       int
}

func (e endpoint) String() string {
	s := net.JoinHostPort(e.host, strconv.Itoa(e.port))
	if e.user != "" {
		s = e.user + "@" + s
	}
	return s
}

// parseEndpoint reads "[user@]host[:port]"; an IPv6 address with a port
// is bracketed ("[::1]:2222"), without one it may be bare. A port of 0
// means "not given".
func parseEndpoint(s string) (endpoint, error) {
	var e endpoint
	if s == "" {
		return e, errors.New("empty host")
	}
	s = strings.TrimPrefix(s, "ssh://")
	if i := strings.LastIndex(s, "@"); i >= 0 {
		e.user, s = s[:i], s[i+1:]
	}
	switch {
	case strings.HasPrefix(s, "["):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			h = strings.Trim(s, "[]")
		} else if p != "" {
			if e.port, err = strconv.Atoi(p); err != nil || e.port <= 0 || e.port > 65535 {
				return e, fmt.Errorf("host %q: bad port %q", s, p)
			}
		}
		e.host = h
	case strings.Count(s, ":") == 1:
		h, p, _ := strings.Cut(s, ":")
		var err error
		if e.port, err = strconv.Atoi(p); err != nil || e.port <= 0 || e.port > 65535 {
			return e, fmt.Errorf("host %q: bad port %q", s, p)
		}
		e.host = h
	default:
		e.host = s
	}
	if e.host == "" {
		return e, fmt.Errorf("host %q: empty host name", s)
	}
	return e, nil
}
