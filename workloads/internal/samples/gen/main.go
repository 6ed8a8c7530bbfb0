// Command gen writes the sample datasets (package samples) into a
// folder: go generate ./workloads remakes examples/datasets.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"lockstep/workloads/internal/samples"
)

func main() {
	dir := flag.String("o", ".", "folder to write the datasets into")
	flag.Parse()
	files := samples.Files()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*dir, name), files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
