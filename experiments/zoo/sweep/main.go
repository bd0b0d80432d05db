// Command sweep trains the model zoo of experiments/zoo (classifiers of GoMLX's standard layers
// on the digits of data/digits and the words of data/words) with each optimizer and seed through
// train.Trainer, and writes every run's per-epoch evaluations and telemetry, a Markdown summary
// (held-out accuracy and cross-entropy, tuned Adam, telemetry, cost, time to accuracy, the runs
// that went wrong) and the figure of held-out accuracy against training time.
//
//	GOEXPERIMENT=simd go run ./experiments/zoo/sweep [-out results/zoo] [-models cnn,transformer] [-optimizers 'FGN*,Adam*'] [-grid] [-alternatives] [-seeds 1,2,3] [-epochs 0] [-batch 0] [-resume]
//	go run ./experiments/zoo/sweep -from a/runs.csv,b/runs.csv -out c   (summary and figures of finished sweeps)
//
// It writes runs.csv (rewritten after every run, so that an interrupted sweep keeps its finished
// runs; -resume trains only the runs it lacks), summary.md and time_to_accuracy.{svg,png,pdf} to
// the output directory.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/zoo"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/atomicfile"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

func run() error {
	var modelNames []string
	for _, m := range zoo.Models {
		modelNames = append(modelNames, m.Name)
	}
	out := flag.String("out", filepath.Join("results", "zoo"), "output directory")
	var kanNames []string
	for _, m := range zoo.KANModels {
		kanNames = append(kanNames, m.Name)
	}
	models := flag.String("models", strings.Join(modelNames, ","), "models to train, comma-separated: of zoo.Models, "+
		"or of zoo.KANModels ("+strings.Join(kanNames, ", ")+")")
	optimizers := flag.String("optimizers", "*", "optimizers to train with: comma-separated names or patterns (path.Match) of "+
		"zoo.Candidates, e.g. 'FGN*,Adam*'")
	seeds := flag.String("seeds", "1,2,3", "seeds (held-out split, initial weights, batch order), comma-separated")
	epochs := flag.Int("epochs", 0, "training epochs per run (0: each model's budget)")
	batch := flag.Int("batch", 0, "batch size of every model (0: each model's, its example's)")
	from := flag.String("from", "", "summarise these finished runs tables (comma-separated runs.csv files) instead of training")
	grid := flag.Bool("grid", false, "add zoo.DefaultGrid (FGN and SGN over α, λ, damping policy and CG cap) to the candidates")
	alternatives := flag.Bool("alternatives", false, "add zoo.Alternatives (the settings the defaults leave off: "+
		"momentum, the damping metric per entry, the noise floor's scale) to the candidates")
	resume := flag.Bool("resume", false, "keep the runs of the output directory's runs.csv (an interrupted sweep's) "+
		"and train only those it lacks; its build and budget must be this sweep's")
	flag.Parse()
	if *epochs < 0 {
		return fmt.Errorf("-epochs %d: want ≥ 0", *epochs)
	}
	if *batch < 0 {
		return fmt.Errorf("-batch %d: want ≥ 0", *batch)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var table *report.Table
	if *from != "" {
		var err error
		if table, err = readTables(strings.Split(*from, ",")); err != nil {
			return err
		}
	} else {
		ms, err := zoo.SelectModels(*models)
		if err != nil {
			return err
		}
		candidates := zoo.Candidates
		if *grid {
			candidates = append(slices.Clone(candidates), zoo.DefaultGrid...)
		}
		if *alternatives {
			candidates = append(slices.Clone(candidates), zoo.Alternatives...)
		}
		opts, err := zoo.SelectOptimizers(candidates, *optimizers)
		if err != nil {
			return err
		}
		var seedList []uint64
		for _, s := range strings.Split(*seeds, ",") {
			seed, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return fmt.Errorf("-seeds: %w", err)
			}
			seedList = append(seedList, seed)
		}
		if table, err = train(ms, opts, seedList, zoo.Config{Epochs: *epochs, Batch: *batch}, *out, *resume); err != nil {
			return err
		}
	}
	runs, err := zoo.RunsFromTable(table)
	if err != nil {
		return err
	}
	var summary bytes.Buffer
	for _, kv := range table.Comments {
		fmt.Fprintf(&summary, "- %s: %s\n", kv[0], kv[1])
	}
	fmt.Fprintln(&summary)
	if err := zoo.Summary(runs, &summary); err != nil {
		return err
	}
	path := filepath.Join(*out, "summary.md")
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(summary.Bytes()); return err }); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	paths, err := zoo.Figure(runs, filepath.Join(*out, "time_to_accuracy"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "sweep: no figure: %v\n", err)
	} else {
		fmt.Printf("wrote %s\n", strings.Join(paths, ", "))
	}
	return nil
}

// train runs the sweep, rewriting out/runs.csv after every run, and returns the runs table. With
// resume, the runs of out/runs.csv are kept (finishedRuns).
func train(ms []zoo.Model, opts []zoo.Optimizer, seeds []uint64, cfg zoo.Config, out string, resume bool) (*report.Table, error) {
	be, err := backend.New()
	if err != nil {
		return nil, err
	}
	if w := backend.SIMDWarning(be); w != "" {
		fmt.Fprintln(os.Stderr, w)
	}
	start := time.Now()
	load := report.LoadAverage()
	command := "go run ./experiments/zoo/sweep"
	for _, arg := range os.Args[1:] {
		command += " " + shellQuote(arg)
	}
	var names []string
	for _, o := range opts {
		names = append(names, o.Name)
	}
	profile := "each model's batch size and epoch budget (experiments/zoo.Models)"
	switch {
	case cfg.Epochs > 0 && cfg.Batch > 0:
		profile = fmt.Sprintf("batch size %d, %d epochs", cfg.Batch, cfg.Epochs)
	case cfg.Epochs > 0:
		profile = fmt.Sprintf("each model's batch size, %d epochs", cfg.Epochs)
	case cfg.Batch > 0:
		profile = fmt.Sprintf("batch size %d, each model's epoch budget (experiments/zoo.Models)", cfg.Batch)
	}
	path := filepath.Join(out, "runs.csv")
	var finished []*zoo.Run // the runs of the table written after each run
	resumed := ""
	if resume {
		if finished, resumed, err = finishedRuns(path, be, profile); err != nil {
			return nil, err
		}
	}
	table := func(runs []*zoo.Run, done bool) *report.Table {
		t := zoo.Table(runs)
		report.Provenance(t, be, profile, command, start)
		t.Comment("optimizers", strings.Join(names, "; "))
		if resumed != "" {
			t.Comment("resumed", resumed)
		}
		end := "(interrupted sweep: the finished runs)"
		if done {
			end = fmt.Sprintf("%s at end; the sweep took %s", report.LoadAverage(), time.Since(start).Round(time.Second))
		}
		t.Comment("load", fmt.Sprintf("1-, 5-, 15-minute load averages %s at start, %s", load, end))
		return t
	}
	runs, err := zoo.Sweep(be, ms, opts, seeds, cfg, finished, func(done, total int, r *zoo.Run) {
		status := ""
		switch {
		case r.Failed != "":
			status = " FAILED: " + r.Failed
		case r.Diverged:
			status = " diverged"
		}
		if len(r.Epochs) > 0 {
			last := r.Epochs[len(r.Epochs)-1]
			status = fmt.Sprintf(": held-out accuracy %.1f%% after %d steps, %.1f s (compile %.2f s)%s",
				100*last.HeldOutAccuracy, last.Steps, last.Seconds, r.CompileSeconds, status)
		}
		fmt.Fprintf(os.Stderr, "[%d/%d] %s, %s, seed %d%s\n", done, total, r.Model, r.Optimizer, r.Seed, status)
		finished = append(finished, r)
		if werr := table(finished, false).Write(path); werr != nil {
			fmt.Fprintln(os.Stderr, "sweep:", werr)
		}
	})
	if err != nil {
		return nil, err
	}
	t := table(runs, true)
	if err := t.Write(path); err != nil {
		return nil, err
	}
	fmt.Printf("wrote %s\n", path)
	return t, nil
}

// shellQuote returns arg as a POSIX shell reads it back: as it is when it holds only letters,
// digits and -_./=,:, else in single quotes (a single quote in it as '\”).
func shellQuote(arg string) string {
	plain := arg != "" && strings.IndexFunc(arg, func(r rune) bool {
		return !(r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./=,:", r)))
	}) < 0
	if plain {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// finishedRuns returns the runs of the runs table at path, written by a sweep on the same build
// and budget (profile), and a note naming how many there are, when and by what command they were
// trained. A missing table has no runs.
func finishedRuns(path string, be compute.Backend, profile string) ([]*zoo.Run, string, error) {
	t, err := report.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	here := report.NewTable()
	report.Provenance(here, be, profile, "", time.Now())
	for _, key := range []string{"backend", "device", "build", "profile"} {
		want, _ := here.Lookup(key)
		if got, _ := t.Lookup(key); got != want {
			return nil, "", fmt.Errorf("-resume: %s has %s %q, this sweep %q: train into another -out", path, key, got, want)
		}
	}
	runs, err := zoo.RunsFromTable(t)
	if err != nil {
		return nil, "", err
	}
	date, _ := t.Lookup("date")
	command, _ := t.Lookup("command")
	return runs, fmt.Sprintf("%d runs kept from %s (%s, %s)", len(runs), path, command, date), nil
}

// readTables reads runs tables and concatenates their rows under a header of comments: those the
// tables share, then, per table, "source" with its path, number of rows and the comments in which
// it differs from the first (command, date, load, ...).
func readTables(paths []string) (*report.Table, error) {
	var tables []*report.Table
	for _, p := range paths {
		t, err := report.Read(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		zoo.CompleteRunsTable(t)
		if len(tables) > 0 && !slices.Equal(t.Header, tables[0].Header) {
			return nil, fmt.Errorf("%s: columns %v differ from the first table's %v", p, t.Header, tables[0].Header)
		}
		tables = append(tables, t)
	}
	all := report.NewTable(tables[0].Header...)
	shared := func(kv [2]string) bool { // every table has the comment
		for _, t := range tables {
			if v, ok := t.Lookup(kv[0]); !ok || v != kv[1] {
				return false
			}
		}
		return true
	}
	for _, kv := range tables[0].Comments {
		if shared(kv) {
			all.Comment(kv[0], kv[1])
		}
	}
	for k, t := range tables {
		var own []string
		for _, kv := range t.Comments {
			if !shared(kv) {
				own = append(own, kv[0]+" "+kv[1])
			}
		}
		all.Comment("source", fmt.Sprintf("%s (%d rows): %s", strings.TrimSpace(paths[k]), len(t.Rows), strings.Join(own, "; ")))
		all.Rows = append(all.Rows, t.Rows...)
	}
	return all, nil
}
