package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rogpeppe/go-internal/diff"

	"lockstep/plans"
)

const fmtHelp = `Usage: lockstep fmt [-check] [-diff] [PATH...]

Lays out plan files canonically: two-space indents, aligned equals signs,
spaces around operators; comments and blank lines stay. PATH is a file or a
directory (searched recursively for *.hcl, skipping hidden directories);
the default is the current directory.

Without flags, files are rewritten in place (atomically) and their names
printed. A file with syntax errors is left alone and reported.

Flags:
  -check   change nothing; list the files that are not formatted and exit 1
  -diff    change nothing; print a unified diff of what would change

Exit status: 0 when nothing needed (or got) formatting, 1 with -check or
-diff when something would change, 2 on errors.

Examples:
  lockstep fmt
  lockstep fmt -check examples/
  lockstep fmt -diff plan.hcl
`

// fmtFlags is fmt's command line, parsed before anything runs.
type fmtFlags struct {
	Paths []string
	Check bool
	Diff  bool
}

func parseFmtFlags(args []string) (fmtFlags, error) {
	var f fmtFlags
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	fs.BoolVar(&f.Check, "check", false, "")
	fs.BoolVar(&f.Diff, "diff", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	f.Paths = pos
	if len(f.Paths) == 0 {
		f.Paths = []string{"."}
	}
	return f, nil
}

func fmtCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseFmtFlags(args)
	if err != nil {
		return flagsFailed("fmt", err, fmtHelp, stdout, stderr)
	}
	files, err := fmtFiles(f.Paths)
	if err != nil {
		errorf(stderr, "%v", err)
		return exitUsage
	}
	code := exitOK
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			errorf(stderr, "%v", err)
			code = exitUsage
			continue
		}
		// The limits first: hcl's parser overflows the stack on deep
		// nesting, which no recover catches.
		if diags := plans.CheckSource(path, src, plans.MaxPlanBytes); diags.HasErrors() {
			writeDiagnostics(stderr, map[string]*hcl.File{path: {Bytes: src}}, diags)
			errorf(stderr, "%s is beyond a limit; it was not formatted", path)
			code = exitUsage
			continue
		}
		if _, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos); diags.HasErrors() {
			writeDiagnostics(stderr, map[string]*hcl.File{path: {Bytes: src}}, diags)
			errorf(stderr, "%s has syntax errors; it was not formatted", path)
			code = exitUsage
			continue
		}
		out := plans.Format(src)
		if bytes.Equal(src, out) {
			continue
		}
		switch {
		case f.Check || f.Diff:
			if f.Diff {
				stdout.Write(diff.Diff(path, src, path+" (formatted)", out))
			} else {
				fmt.Fprintln(stdout, path)
			}
			if code == exitOK {
				code = exitFailed
			}
		default:
			if err := writeFileAtomic(path, out, permOf(path, 0o644)); err != nil {
				errorf(stderr, "%v", err)
				code = exitUsage
				continue
			}
			fmt.Fprintln(stdout, path)
		}
	}
	return code
}

// fmtFiles expands the paths: files as given, directories searched for
// *.hcl files (hidden directories such as .git and .lockstep skipped), in
// lexical order.
func fmtFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("cannot format %s: %w", p, err)
		}
		if !info.IsDir() {
			if strings.HasSuffix(p, ".json") {
				return nil, fmt.Errorf("cannot format %s: fmt lays out HCL native syntax, not JSON", p)
			}
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".hcl") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot search %s: %w", p, err)
		}
	}
	return out, nil
}

// permOf is the permissions of the file at path (through a link), else
// def.
func permOf(path string, def fs.FileMode) fs.FileMode {
	if info, err := os.Stat(path); err == nil {
		return info.Mode().Perm()
	}
	return def
}

// writeFileAtomic replaces path with data, with permissions perm; a reader
// sees the old file or the new one, never half of it, and the file is
// never readable beyond perm. A symbolic link is followed: the file it
// points to is replaced and the link stays.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	// Synced before the rename, so a crash leaves the old file or the
	// whole new one.
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	done = true
	return nil
}
