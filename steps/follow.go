package steps

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

// readChunk is how much one ReadAt asks for.
const readChunk = 1 << 20

// Follower reads what is appended to a file on a target, from a starting
// offset on, and keeps following it across truncation (the file shrinks:
// read again from 0) and rotation (another file now has the name: read the
// new one from 0).
type Follower struct {
	t       targets.Target
	path    string
	id      string
	off     int64
	text    []byte
	dropped int64 // bytes cut from the front of text to stay under maxKept
	resets  []string
}

// FollowFrom follows path from its current end: only what is written from
// now on counts. A missing file is followed from its creation.
func FollowFrom(ctx context.Context, t targets.Target, path string) (*Follower, error) {
	fi, err := t.Stat(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	f := &Follower{t: t, path: path}
	if fi.Exists {
		f.id, f.off = fi.ID, fi.Size
	}
	return f, nil
}

// FollowStart follows path from its beginning: for a log a launch started
// afresh.
func FollowStart(t targets.Target, path string) *Follower {
	return &Follower{t: t, path: path}
}

// Path is the followed file.
func (f *Follower) Path() string { return f.path }

// Poll reads what was appended since the last call and reports whether
// anything new arrived.
func (f *Follower) Poll(ctx context.Context) (bool, error) {
	grew := false
	for {
		data, fi, err := f.t.ReadAt(ctx, f.path, f.off, readChunk)
		if err != nil {
			return grew, fmt.Errorf("read %s: %w", f.path, err)
		}
		if !fi.Exists {
			return grew, nil
		}
		switch {
		case f.id != "" && fi.ID != f.id:
			f.resets = append(f.resets, "rotated")
			f.id, f.off = fi.ID, 0
			continue
		case fi.Size < f.off:
			f.resets = append(f.resets, "truncated")
			f.off = 0
			continue
		}
		f.id = fi.ID
		if len(data) == 0 {
			return grew, nil
		}
		grew = true
		f.off += int64(len(data))
		f.text = append(f.text, data...)
		if over := len(f.text) - maxKept; over > 0 {
			f.text = append(f.text[:0], f.text[over:]...)
			f.dropped += int64(over)
		}
		if len(data) < readChunk {
			return grew, nil
		}
	}
}

// Read is how many bytes the follower has read in all: it changes exactly
// when Text does, so a caller can keep what it made of Text until then.
func (f *Follower) Read() int64 { return f.dropped + int64(len(f.text)) }

// Text is what was written since the follower began (its last 8 MiB).
func (f *Follower) Text() string { return string(f.text) }

// Lines are the complete and partial lines of Text.
func (f *Follower) Lines() []string { return LinesOf(string(f.text)) }

// LinesOf splits text into lines, without a last empty one.
func LinesOf(text string) []string {
	s := strings.TrimRight(text, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// LastLine is the last non-empty line written. It reads back from the
// end: the runner asks every turn, and the text can be 8 MiB.
func (f *Follower) LastLine() string {
	text := f.text
	for {
		i := bytes.LastIndexByte(text, '\n')
		if line := text[i+1:]; len(bytes.TrimSpace(line)) > 0 {
			return strings.TrimRight(string(line), "\r")
		}
		if i < 0 {
			return ""
		}
		text = text[:i]
	}
}

// Tail is the last n lines, found from the end.
func (f *Follower) Tail(n int) []string {
	if n <= 0 {
		return nil
	}
	text := bytes.TrimRight(f.text, "\n")
	i := len(text)
	for k := 0; k < n && i >= 0; k++ {
		i = bytes.LastIndexByte(text[:i], '\n')
	}
	return LinesOf(string(text[i+1:]))
}

// Matching returns the lines that contain sub, at most n of them, the last ones.
func (f *Follower) Matching(sub string, n int) []string {
	var out []string
	for _, l := range bytes.Split(f.text, []byte("\n")) {
		if bytes.Contains(l, []byte(sub)) {
			out = append(out, string(l))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// FollowAt follows the file with identity id at path from offset off: for
// reading the end of a large file.
func FollowAt(t targets.Target, path, id string, off int64) *Follower {
	return &Follower{t: t, path: path, id: id, off: off}
}
