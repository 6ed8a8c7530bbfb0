// Command gen rewrites the generated sections of docs/language.md (the
// tables of blocks, attributes, outputs, probes, loads and functions) from
// plans.Language(). Run it from the repository root (go run ./docs/gen)
// or through go generate ./docs. With -check it changes nothing and exits
// 1 when the file is out of date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"lockstep/docs/internal/langdoc"
	"lockstep/plans"
)

func main() {
	path := flag.String("doc", "", "the reference to rewrite (default: docs/language.md, or language.md inside docs/)")
	check := flag.Bool("check", false, "change nothing; exit 1 when the file is out of date")
	flag.Parse()
	if err := run(*path, *check); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, check bool) error {
	if path == "" {
		path = "docs/language.md"
		if _, err := os.Stat(path); err != nil {
			path = "language.md"
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := langdoc.Update(old, langdoc.Sections(plans.Language()))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	if check {
		return fmt.Errorf("%s is out of date: run go generate ./docs", path)
	}
	return os.WriteFile(path, updated, 0o644)
}
