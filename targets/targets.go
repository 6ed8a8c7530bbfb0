package targets

import (
	"cmp"
	"context"
	"net"
	"slices"
	"time"
)

// Target is a machine where steps run and probes look.
//
// Every method takes a context; a call that cannot finish before the
// context ends returns its error. Errors that mean "the connection to the
// target dropped" wrap ErrDisconnected, so a caller never takes a lost
// connection for a dead process.
type Target interface {
	// Name is the plan's name for the target ("local", "gpu").
	Name() string

	// Run runs c.Line with /bin/sh -c to completion, in a session of its
	// own. A non-zero exit is not an error: it is in Result.ExitCode.
	//
	// The command is marked as Start marks a launch, before it runs
	// anything, with a mark of its own (Result.Mark): what it leaves
	// running when it exits (a daemon, a job it backgrounded) is listed by
	// Members(ctx, Process{Mark: res.Mark}) and ended by Stop. When ctx
	// ends, every process carrying the mark is ended, not only the
	// command's group, and Run returns once none is left (or after a
	// bounded wait).
	Run(ctx context.Context, c Command) (Result, error)

	// Start launches c.Line detached from lockstep and from any session:
	// its own session and process group, stdin from /dev/null, stdout and
	// stderr to log, a file Start creates: when a regular file is already
	// at log, Start fails with an error wrapping fs.ErrExist and launches
	// nothing, so a launch never writes into a file someone else writes
	// or reads as theirs. Moving an old log aside is the caller's job
	// (MoveAside, then Start again if another launch made a new one in
	// between). Process.LogID is the identity of the file the process was
	// given, taken from the descriptor, so ReadFile reads this launch's
	// log and no other. It returns once the process exists.
	//
	// The process is marked before it runs anything, with a value fresh
	// for this launch (Process.Mark) that every descendant inherits: a
	// variable in the environment (added to c.Env) and the soft limit of
	// RLIMIT_RTTIME, which survives an emptied environment (env -i) and a
	// server overwriting its environment to set its process title (nginx,
	// redis, postgres do). Members and Stop find the launch's processes by
	// it.
	Start(ctx context.Context, c Command, log string) (Process, error)

	// Inspect tells whether p is still the process Start launched: alive,
	// exited (with its status when it can be known), or gone with its pid
	// now taken by another process (its start time differs; a zero
	// p.StartTime skips that check). The command line is not compared: it
	// changes when the shell execs the command. A zombie counts as exited.
	Inspect(ctx context.Context, p Process) (ProcessState, error)

	// Members lists the live processes that belong to the launch p: those
	// carrying its mark and p itself, those sharing a process group or a
	// session with one of them, and their descendants, wherever they went
	// (setsid, a double fork, a group leader dead). A zombie is not
	// listed; lockstep's own processes never are, nor is a group or a
	// session that holds one of them. Nothing is chosen by its command
	// line. A Process holding only a Mark (a Run's) names the processes
	// of that mark, their groups, sessions and descendants.
	Members(ctx context.Context, p Process) ([]ProcessInfo, error)

	// Stop ends every member of the launch p (as Members finds them):
	// SIGTERM (and SIGCONT), then SIGKILL after grace, and returns once
	// none is left or ctx ends. Each signal goes to a process known by its
	// pid and start time, so a pid reused meanwhile is not hit.
	Stop(ctx context.Context, p Process, grace time.Duration) error

	// MoveAside renames an existing file at path to a fresh name beside it
	// and returns that name, or "" when there was no file. Only a regular
	// file or a symbolic link is moved: a device (/dev/null), a fifo or a
	// directory is left where it is, and "" returned.
	MoveAside(ctx context.Context, path string) (string, error)

	// Stat describes path; a missing file is FileInfo{Exists: false} and
	// no error.
	Stat(ctx context.Context, path string) (FileInfo, error)

	// ReadAt reads up to max bytes of path from offset off. The FileInfo
	// describes the file that was read (from the open descriptor), so a
	// caller following a log can tell rotation (ID changed) and truncation
	// (Size < its offset) apart from growth.
	ReadAt(ctx context.Context, path string, off int64, max int) ([]byte, FileInfo, error)

	// ReadFile reads up to max bytes from off of the one file f names by
	// its identity (f.ID), wherever it is now: at f.At (where it was last
	// found), at f.Path, among the open descriptors of the processes
	// f.PIDs (a log moved elsewhere or deleted, still written), or among
	// the entries of f.Path's directory (a log moved aside or rotated
	// beside it). Identity is checked on the descriptor read from, so it
	// never reads another file, whatever has since appeared at f.Path. A
	// file found nowhere is FileInfo{Exists: false} and no error; the
	// FileInfo's Path says where it was found, for the next f.At.
	ReadFile(ctx context.Context, f FileRef, off int64, max int) ([]byte, FileInfo, error)

	// SHA256 hashes the file at path where it lies (a missing file is
	// FileInfo{Exists: false}, no error), so a check of a large file need
	// not carry it across.
	SHA256(ctx context.Context, path string) (string, FileInfo, error)

	// Processes lists the processes whose command line matches the
	// regular expression match (RE2 syntax).
	Processes(ctx context.Context, match string) ([]ProcessInfo, error)

	// Listeners lists the processes listening on TCP port (any address).
	// A listener whose owner cannot be seen (another user's, without the
	// rights) has PID 0.
	Listeners(ctx context.Context, port int) ([]Listener, error)

	// Dial connects from the target's side: for an SSH target the
	// connection is carried through SSH (direct-tcpip), so 127.0.0.1 means
	// the target's loopback.
	Dial(ctx context.Context, network, addr string) (net.Conn, error)

	// Close releases the connection; processes started with Start are
	// left alone (stopping them is the runner's decision).
	Close() error
}

// DialPreparer is a Target whose Dial rides a connection of its own (an
// SSH target's: the handshake, and a session run once so that forwarded
// traffic is not held by delayed ACKs). PrepareDial makes that connection
// ready, so that a caller timing its dials (a load) starts its clock
// after it: that time is the target's, not any request's connect, and a
// first request whose timeout it ate would be counted a connect failure.
type DialPreparer interface {
	PrepareDial(ctx context.Context) error
}

// Command is a shell command line and the environment it runs in.
type Command struct {
	Line string            // run with /bin/sh -c
	Env  map[string]string // added to the target's environment
	Dir  string            // working directory; "" means the target's default
}

// Result is what a command run to completion left.
type Result struct {
	ExitCode int // -1 when killed by a signal
	Signal   string
	Stdout   []byte
	Stderr   []byte
	Duration time.Duration
	// Mark is the mark the command and everything it started carry (as
	// Process.Mark); "" when the command was not marked.
	Mark string
	// Started is the start time of the command's first process (clock
	// ticks since boot, as Process.StartTime), 0 when not known: nothing
	// that started before it can carry its mark. Owned gives both.
	Started uint64
	// from says where on the local machine's pids what the command
	// started can be (Local.Run; zero elsewhere).
	from procFrom
	// LeftNothing says that the target looked for what the command left
	// as it ended, and nothing carried its mark then: what
	// Members(Owned()) would have answered, known without the call (and
	// nothing can carry the mark later: only a marked process makes
	// another). False says nothing either way. Leftovers reads it.
	LeftNothing bool
}

// Leftovers lists what the command of r left running (the members of
// r.Owned()), without asking t when r says it left nothing.
func Leftovers(ctx context.Context, t Target, r Result) ([]ProcessInfo, error) {
	if r.LeftNothing {
		return nil, nil
	}
	return t.Members(ctx, r.Owned())
}

// Owned is the Process that names what the command left: its mark, and
// its start time as the earliest any of it can have started. It has no
// pid: the command's own process has exited.
func (r Result) Owned() Process { return Process{Mark: r.Mark, StartTime: r.Started, from: r.from} }

// Process identifies a launched process. The pid alone is not enough: a
// pid is reused, so StartTime (the kernel's, in clock ticks since boot, as
// /proc/PID/stat field 22) tells the launch from a newcomer. Command is
// for people to read.
type Process struct {
	PID       int    `json:"pid"`
	PGID      int    `json:"pgid"`
	Session   int    `json:"sid,omitempty"`
	StartTime uint64 `json:"start_time"`
	Command   string `json:"command"` // the command line as /proc shows it at start
	Log       string `json:"log"`
	// Mark is the launch's own mark (12 hex digits, random), inherited by
	// everything it starts; "" for a process not started by Start.
	Mark string `json:"mark,omitempty"`
	// Daemon is true for a process a launch daemonized into: found among
	// its members, not started by Start, so no exit status is recorded
	// for it. Inspect judges it from the process table alone.
	Daemon bool `json:"daemon,omitempty"`
	// LogID is the identity (FileInfo.ID) of the log Start opened for
	// the process: Log is where it was, LogID which file it is.
	LogID string `json:"log_id,omitempty"`
	// from, for what a local run's command left (Result.Owned), bounds
	// the pids a look reads (Local.scan); never recorded: a Process read
	// back from a record is looked for among every process.
	from procFrom
}

// LogFile names a launch's log by its identity, for ReadFile: its pid and
// its group's leader hold it open while they run. Without a LogID (a
// Process recorded before lockstep kept one) ID is "": such a log can
// only be followed by its name.
func (p Process) LogFile() FileRef {
	return FileRef{Path: p.Log, ID: p.LogID, PIDs: []int{p.PID, p.PGID}}
}

// FileRef names one file by its identity (FileInfo.ID), not by its name:
// a log keeps its identity when it is renamed, and a new file at the same
// path has another.
type FileRef struct {
	Path string // the file's name when it was first seen
	At   string // where it was last found; tried first ("" means Path)
	ID   string // its FileInfo.ID
	PIDs []int  // processes that may hold it open
}

// ProcessState is what Inspect saw.
type ProcessState struct {
	Alive bool
	// Exited is true once the process has ended; ExitCode and Signal say
	// how, when that can be known (ExitCode -1 otherwise).
	Exited   bool
	ExitCode int
	Signal   string
	// Replaced is true when the pid now belongs to another process.
	Replaced bool
	// PGID and Session are the live process's group and session as of
	// this look: a daemon may leave its group (setsid) after it was
	// found, and its group is then the one to stop and to compare.
	PGID, Session int
}

// FileInfo describes a file on a target.
type FileInfo struct {
	Exists  bool
	Size    int64
	ID      string // device and inode; changes when the file is replaced
	ModTime time.Time
	Path    string // where ReadFile found the file (set by ReadFile only)
}

// ProcessInfo is one entry of a process listing.
type ProcessInfo struct {
	PID       int
	PPID      int
	PGID      int
	Session   int
	StartTime uint64 // as Process.StartTime
	State     string // as /proc/PID/stat shows it: R, S, Z...
	Command   string
}

// Listener is a socket listening on a port and the process that owns it.
type Listener struct {
	Address string // "0.0.0.0:8080", "[::1]:8080"
	PID     int
	// PGID is the listener's process group: a launch's pid is often a
	// shell whose child listens, and both share the launch's group.
	PGID    int
	Command string
}

// sortListeners puts listeners in the order both targets return them: by
// pid, then address.
func sortListeners(ls []Listener) {
	slices.SortFunc(ls, func(a, b Listener) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Address, b.Address))
	})
}
