package probes

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"lockstep/targets"
)

// maxKept bounds the text a follower keeps: conditions see the last maxKept
// bytes written since the follower began. Reading stays incremental: a
// 10 GB log costs only its new bytes.
const maxKept = 8 << 20

// readChunk is how much one read asks for.
const readChunk = 1 << 20

// maxOld is how many files rotated away from a followed path are still
// read for what their writers add after the rotation.
const maxOld = 2

// Follower reads what is appended to a log on a target and keeps what it
// read as complete lines.
//
// Evidence is complete lines only: a line whose end has not been written
// yet is held back until it is. A line ends at "\n", "\r\n", or a lone
// "\r" (a progress bar redrawing itself, as tqdm does): each redraw is a
// line, so the last line moves with the bar. A "\r" at the very end of
// what was read waits for the next byte, which may make it "\r\n".
//
// A follower of a path (FollowFrom, FollowStart, FollowAt) follows
// truncation (the file shrinks: read it again from 0) and rotation
// (another file now has the name): it first reads what the old file
// gained, found by its identity beside its old name, then the new file
// from 0, and keeps reading the old one for a while, as a writer may still
// add to it until it reopens its log. A follower of a launch
// (FollowLaunch) reads only the file that launch's process was given,
// wherever it is renamed, never another file that appears at its path.
type Follower struct {
	t      targets.Target
	path   string
	launch bool // one file by identity: never another at the path
	cur    source
	old    []source // rotated away from path, still read
	// text holds complete lines only; dropped counts the bytes cut from
	// its front to stay under maxKept.
	text    []byte
	dropped int64
	resets  []string
}

// source is one file a follower reads.
type source struct {
	ref targets.FileRef // ID "" until the file is first seen
	off int64
	// partial is the end of what was read that is not a complete line yet.
	partial []byte
	// midLine is set when reading starts inside a line: what comes before
	// the first line end is a fragment, not a line.
	midLine bool
	// gone is set once a path follower's file, moved away from the path,
	// was looked for and not found: it is not searched for again.
	gone bool
}

// FollowFrom follows path from its current end: only what is written from
// now on counts. A missing file is followed from its creation.
func FollowFrom(ctx context.Context, t targets.Target, path string) (*Follower, error) {
	fi, err := t.Stat(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Exists {
		return FollowStart(t, path), nil
	}
	return FollowAt(t, path, fi.ID, fi.Size), nil
}

// FollowStart follows path from its beginning.
func FollowStart(t targets.Target, path string) *Follower {
	return &Follower{t: t, path: path, cur: source{ref: targets.FileRef{Path: path}}}
}

// FollowAt follows path from offset off of the file with identity id
// (what Stat said of it at some earlier moment): if path now holds
// another file, what id gained from off is read first.
func FollowAt(t targets.Target, path, id string, off int64) *Follower {
	return &Follower{t: t, path: path, cur: from(targets.FileRef{Path: path, ID: id}, off)}
}

// from is a source that reads ref from off. Past the start it reads from
// the byte before off, and drops what comes up to the first line end: a
// line begun before off is a fragment, not a line written since.
func from(ref targets.FileRef, off int64) source {
	if off <= 0 {
		return source{ref: ref}
	}
	return source{ref: ref, off: off - 1, midLine: true}
}

// FollowLaunch follows the log Start opened for p, from offset off: the
// very file the process was given (p.LogID), wherever it is now. A
// Process without a LogID is followed by its path.
func FollowLaunch(t targets.Target, p targets.Process, off int64) *Follower {
	if p.LogID == "" {
		return FollowAt(t, p.Log, "", off)
	}
	return &Follower{t: t, path: p.Log, launch: true, cur: from(p.LogFile(), off)}
}

// LaunchTail is the last n lines of the log Start opened for p, read from
// its last 64 KiB: what a dead or stopped process said last, with its
// unfinished last line, as it writes no more (this is shown, never a
// condition's evidence).
func LaunchTail(ctx context.Context, t targets.Target, p targets.Process, n int) []string {
	const window = 64 << 10
	var off int64
	if p.LogID != "" {
		if _, fi, err := t.ReadFile(ctx, p.LogFile(), 0, 0); err == nil && fi.Size > window {
			off = fi.Size - window
		}
	} else if fi, err := t.Stat(ctx, p.Log); err == nil && fi.Size > window {
		off = fi.Size - window
	}
	f := FollowLaunch(t, p, off)
	f.Poll(ctx)
	if len(f.cur.partial) > 0 && !f.cur.midLine {
		f.text = append(append(f.text, f.cur.partial...), '\n')
	}
	return f.Tail(n)
}

// Path is the followed file's name.
func (f *Follower) Path() string { return f.path }

// Poll reads what was appended since the last call and reports whether
// any complete line arrived.
func (f *Follower) Poll(ctx context.Context) (bool, error) {
	before := f.Read()
	kept := f.old[:0]
	for i := range f.old {
		found, err := f.drain(ctx, &f.old[i])
		if err != nil {
			return f.Read() != before, err
		}
		if found {
			kept = append(kept, f.old[i])
		}
	}
	f.old = kept
	var err error
	if f.launch {
		_, err = f.drain(ctx, &f.cur)
	} else {
		err = f.pollPath(ctx)
	}
	return f.Read() != before, err
}

// pollPath reads the file now at the followed path.
func (f *Follower) pollPath(ctx context.Context) error {
	cur := &f.cur
	for {
		data, fi, err := f.t.ReadAt(ctx, f.path, cur.off, readChunk)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.path, err)
		}
		if !fi.Exists {
			if cur.ref.ID != "" && !cur.gone {
				// Moved away and no new file yet: the old one may still
				// gain its last lines.
				found, err := f.drain(ctx, cur)
				cur.gone = !found && err == nil
				return err
			}
			return nil
		}
		switch {
		case cur.ref.ID != "" && fi.ID != cur.ref.ID:
			// Rotated: what the old file gained comes first, and its
			// writer may add more until it reopens the path.
			f.resets = append(f.resets, "rotated")
			old := *cur
			found := false
			if !old.gone {
				if found, err = f.drain(ctx, &old); err != nil {
					return err
				}
			}
			if found {
				f.old = append(f.old, old)
				if len(f.old) > maxOld {
					f.old = f.old[len(f.old)-maxOld:]
				}
			}
			*cur = source{ref: targets.FileRef{Path: f.path, ID: fi.ID}}
			continue
		case fi.Size < cur.off:
			f.truncated(cur)
			continue
		}
		cur.ref.ID = fi.ID
		f.add(cur, data)
		if len(data) < readChunk {
			return nil
		}
	}
}

// drain reads what the file src names by identity gained, and reports
// whether the file was found.
func (f *Follower) drain(ctx context.Context, src *source) (bool, error) {
	for {
		data, fi, err := f.t.ReadFile(ctx, src.ref, src.off, readChunk)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", src.ref.Path, err)
		}
		if !fi.Exists {
			return false, nil
		}
		src.ref.At = fi.Path
		if fi.Size < src.off {
			f.truncated(src)
			continue
		}
		f.add(src, data)
		if len(data) < readChunk {
			return true, nil
		}
	}
}

// truncated starts src again from 0: what it held is gone, and so is the
// line it had begun.
func (f *Follower) truncated(src *source) {
	f.resets = append(f.resets, "truncated")
	src.off, src.partial, src.midLine = 0, nil, false
}

// add takes data read from src: its complete lines join the text, the
// rest waits in src for its end.
func (f *Follower) add(src *source, data []byte) {
	src.off += int64(len(data))
	buf := append(src.partial, data...)
	end := completeEnd(buf)
	done := buf[:end]
	if src.midLine && end > 0 {
		// The first line end closes the fragment reading began in.
		done = done[lineEnd(done):]
		src.midLine = false
	}
	f.text = append(f.text, done...)
	src.partial = append([]byte(nil), buf[end:]...)
	if over := len(src.partial) - maxKept; over > 0 {
		// A line longer than what is kept: its front cannot be shown.
		src.partial = src.partial[over:]
	}
	if over := len(f.text) - maxKept; over > 0 {
		// Cut at a line's end, so no fragment passes for a line.
		over += lineEnd(f.text[over:])
		f.text = append(f.text[:0], f.text[over:]...)
		f.dropped += int64(over)
	}
}

// completeEnd is the length of b's complete lines: up to its last "\n",
// or its last "\r" that is not the last byte (the next byte tells a lone
// "\r" from "\r\n").
func completeEnd(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		switch {
		case b[i] == '\n':
			return i + 1
		case b[i] == '\r' && i < len(b)-1:
			return i + 1
		}
	}
	return 0
}

// lineEnd is the length of b's first line with its end ("\n", "\r\n" or
// "\r"), or len(b) when b holds no line end.
func lineEnd(b []byte) int {
	i := bytes.IndexAny(b, "\r\n")
	switch {
	case i < 0:
		return len(b)
	case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
		return i + 2
	}
	return i + 1
}

// Read is how many bytes of complete lines the follower has taken in all:
// it changes exactly when Text does, so a caller can keep what it made of
// Text until then.
func (f *Follower) Read() int64 { return f.dropped + int64(len(f.text)) }

// Text is the complete lines written since the follower began (their last
// 8 MiB), as written.
func (f *Follower) Text() string { return string(f.text) }

// Lines are the lines of Text.
func (f *Follower) Lines() []string { return LinesOf(string(f.text)) }

// LinesOf splits text into lines at "\n", "\r\n" and a lone "\r" (a
// redraw), without the line ends. A "\r" that begins a line redraws
// nothing and makes no line; trailing empty lines are left out.
func LinesOf(text string) []string {
	var out []string
	b := []byte(text)
	for len(b) > 0 {
		n := lineEnd(b)
		line := bytes.TrimRight(b[:n], "\r\n")
		if len(line) > 0 || b[n-1] == '\n' {
			out = append(out, string(line))
		}
		b = b[n:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// lastLine splits text at its last line: the line without its end, and
// what comes before it.
func lastLine(text []byte) (line, before []byte) {
	end := len(text)
	switch {
	case end >= 2 && text[end-2] == '\r' && text[end-1] == '\n':
		end -= 2
	case end >= 1 && (text[end-1] == '\n' || text[end-1] == '\r'):
		end--
	}
	i := bytes.LastIndexAny(text[:end], "\r\n")
	return text[i+1 : end], text[:i+1]
}

// LastLine is the last non-blank line written: with a progress bar, its
// last complete redraw. It reads back from the end: the runner asks every
// turn, and the text can be 8 MiB.
func (f *Follower) LastLine() string {
	text := f.text
	for len(text) > 0 {
		line, before := lastLine(text)
		if len(bytes.TrimSpace(line)) > 0 {
			return string(line)
		}
		text = before
	}
	return ""
}

// Tail is the last n lines as a terminal shows them (TailOf).
func (f *Follower) Tail(n int) []string { return tailOf(f.text, n) }

// TailOf is the last n lines of text as a terminal shows them, found from
// the end: a line redrawn with "\r" shows only its last redraw, so a
// progress bar takes one line, not one per redraw. For showing, never for
// a condition.
func TailOf(text string, n int) []string { return tailOf([]byte(text), n) }

func tailOf(text []byte, n int) []string {
	if n <= 0 {
		return nil
	}
	text = bytes.TrimRight(text, "\r\n")
	if len(text) == 0 {
		return nil
	}
	var out []string
	for len(out) < n {
		i := bytes.LastIndexByte(text, '\n')
		shown := text[i+1:]
		// The last redraw with something in it.
		for len(shown) > 0 {
			line, before := lastLine(shown)
			if len(line) > 0 || len(before) == 0 {
				shown = line
				break
			}
			shown = before
		}
		out = append(out, strings.TrimRight(string(shown), "\r"))
		if i < 0 {
			break
		}
		text = text[:i]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Matching returns the lines that contain sub, at most n of them, the last ones.
func (f *Follower) Matching(sub string, n int) []string {
	var out []string
	for _, l := range f.Lines() {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
