package targets

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skeema/knownhosts"
)

// A fleet's hosts are verified against the same known_hosts files, which
// list every one of them: parsed for each host, opening N hosts read N²
// lines (a tenth of lockstep's own CPU on 50 hosts with a file of 50
// lines; a ~/.ssh/known_hosts of thousands of lines costs milliseconds a
// host). The files are parsed once and shared while they are unchanged:
// each use first looks at them again (device, inode, size, modification
// and change times), so a key removed or replaced since is never
// accepted from the copy; a file changed in the last second is parsed
// for each use (see settled).

// knownHostsDBs holds the last parse of each list of known_hosts files.
var knownHostsDBs = struct {
	mu sync.Mutex
	m  map[string]*parsedKnownHosts
}{m: map[string]*parsedKnownHosts{}}

// parsedKnownHosts is one parse of a list of files, and what they were
// when it began; ready closes once db and err are set.
type parsedKnownHosts struct {
	stamps []fileStamp
	ready  chan struct{}
	db     *knownhosts.HostKeyDB
	err    error
}

// fileStamp is what says a file is the one parsed: a file rewritten or
// replaced (an editor's rename, ssh-keygen -R) differs in one of them.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64 // ns
	ctime    int64 // ns
}

func stampsOf(files []string) ([]fileStamp, bool) {
	stamps := make([]fileStamp, len(files))
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return nil, false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, false
		}
		stamps[i] = fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
			mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	}
	return stamps, true
}

// settled is how long ago a file must have last changed for its stamp to
// tell its content: a file's times move in coarse steps (a kernel tick),
// so a file rewritten in place at the same size within one step of its
// last change keeps its stamp. A file changed more recently is parsed
// for each use, as git treats a "racily clean" entry.
const settled = time.Second

func racy(stamps []fileStamp, now time.Time) bool {
	for _, st := range stamps {
		if now.UnixNano()-max(st.mtime, st.ctime) < int64(settled) {
			return true
		}
	}
	return false
}

func sameStamps(a, b []fileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// knownHostsDB is knownhosts.NewDB(files...), parsed once for all the
// callers that ask while the files stay as they were. Callers that ask
// while the parse runs wait for it rather than parse again. A file that
// changes while it is parsed is parsed again by the next caller.
func knownHostsDB(files []string) (*knownhosts.HostKeyDB, error) {
	return knownHostsDBAt(files, time.Now())
}

// knownHostsDBAt is knownHostsDB at the time now (tests move it).
func knownHostsDBAt(files []string, now time.Time) (*knownhosts.HostKeyDB, error) {
	stamps, ok := stampsOf(files)
	if !ok || racy(stamps, now) {
		return knownhosts.NewDB(files...)
	}
	key := strings.Join(files, "\x00")
	knownHostsDBs.mu.Lock()
	p := knownHostsDBs.m[key]
	if p == nil || !sameStamps(p.stamps, stamps) {
		p = &parsedKnownHosts{stamps: stamps, ready: make(chan struct{})}
		knownHostsDBs.m[key] = p
		knownHostsDBs.mu.Unlock()
		p.db, p.err = knownhosts.NewDB(files...)
		if after, ok := stampsOf(files); !ok || !sameStamps(after, stamps) || p.err != nil {
			// Changed under the parse, or unreadable: this caller
			// gets what it read, and nobody else reuses it.
			knownHostsDBs.mu.Lock()
			if knownHostsDBs.m[key] == p {
				delete(knownHostsDBs.m, key)
			}
			knownHostsDBs.mu.Unlock()
		}
		close(p.ready)
		return p.db, p.err
	}
	knownHostsDBs.mu.Unlock()
	<-p.ready
	knownHostsDBs.mu.Lock()
	kept := knownHostsDBs.m[key] == p
	knownHostsDBs.mu.Unlock()
	if !kept {
		// The parse it waited for saw the files change, or failed.
		return knownhosts.NewDB(files...)
	}
	return p.db, nil
}
