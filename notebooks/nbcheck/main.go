// Command nbcheck inspects notebooks executed by `jupyter nbconvert --execute` and compares them
// with the committed ones.
//
// GoNB reports a compile error as a cell error but a run-time failure (a panic, a failed
// nb.Check, os.Exit) only as text, so nbconvert's exit status is not enough. nbcheck fails when an
// executed notebook has an error output, or a text output with a "panic:", an "exit status N" or an
// nb.FailedPrefix line.
//
// With -committed it also checks that the committed notebooks carry the outputs the code produces
// now: the same cells with the same sources, and for each code cell the same stdout and stderr
// text (however GoNB chunked it) and the same figures in order. Text must match after whitespace
// runs are collapsed, with numbers equal to a relative 1e-2 (values below 1e-9 in magnitude,
// rounding-level errors, all match); PNG figures must have the same size with at most 1% of their
// pixels changed. Cells tagged "machine-dependent" (timings) are compared by
// their kinds of output only.
//
// With -update it writes the executed notebooks, normalised, over the committed ones instead.
// Normalisation replaces the repository's absolute path by <repository> and drops nbconvert's
// execution timestamps, so the committed files do not depend on where or when they were run.
//
//	nbcheck -repo . -executed /tmp/executed -committed notebooks
//	nbcheck -repo . -executed /tmp/executed -committed notebooks -update
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	repo := flag.String("repo", ".", "repository root (its absolute path is normalised away)")
	executed := flag.String("executed", "", "directory of the executed notebooks")
	committed := flag.String("committed", "", "directory of the committed notebooks to compare with (or to update)")
	update := flag.Bool("update", false, "write the normalised executed notebooks over the committed ones")
	flag.Parse()
	if err := run(*repo, *executed, *committed, *update); err != nil {
		fmt.Fprintln(os.Stderr, "nbcheck:", err)
		os.Exit(1)
	}
}

func run(repo, executed, committed string, update bool) error {
	if executed == "" {
		return fmt.Errorf("-executed is required")
	}
	if update && committed == "" {
		return fmt.Errorf("-update needs -committed")
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	paths, err := filepath.Glob(filepath.Join(executed, "*.ipynb"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no notebooks in %s", executed)
	}
	sort.Strings(paths)
	var problems []string
	for _, path := range paths {
		nb, err := readNotebook(path)
		if err != nil {
			return err
		}
		nb.normalise(root)
		name := filepath.Base(path)
		for _, p := range nb.failures() {
			problems = append(problems, name+": "+p)
		}
		if committed == "" {
			continue
		}
		target := filepath.Join(committed, name)
		if update {
			if err := nb.write(target); err != nil {
				return err
			}
			fmt.Println("updated", target)
			continue
		}
		want, err := readNotebook(target)
		if err != nil {
			return err
		}
		for _, p := range compare(want, nb) {
			problems = append(problems, name+": "+p)
		}
	}
	if committed != "" && !update {
		names, err := filepath.Glob(filepath.Join(committed, "*.ipynb"))
		if err != nil {
			return err
		}
		if len(names) != len(paths) {
			problems = append(problems, fmt.Sprintf("%d committed notebooks but %d executed", len(names), len(paths)))
		}
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) in the executed notebooks", len(problems))
	}
	fmt.Printf("%d notebooks executed without errors", len(paths))
	if committed != "" && !update {
		fmt.Print(" and match the committed outputs")
	}
	fmt.Println()
	return nil
}
