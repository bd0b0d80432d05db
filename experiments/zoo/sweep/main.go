// Command sweep trains the model zoo of experiments/zoo (a ReLU MLP, a tanh MLP and a CNN
// written with GoMLX's layers, on the handwritten digits of data/digits) through train.Trainer
// with FGN and SGN over a grid of settings, with their default settings, and with Adam, and
// writes every run and a Markdown summary of held-out accuracies: the sweep from which
// FGN().Done() and SGN().Done() take their defaults (BENCHMARKS.md).
//
//	GOEXPERIMENT=simd go run ./experiments/zoo/sweep [-out results/zoo] [-models relu-mlp,cnn] [-seeds 1,2,3] [-policies constant,lm] [-adam 0.001,0.01] [-grid=false] [-epochs 10]
//
// It writes runs.csv (one row per model, optimizer and seed, with provenance comments) and
// summary.md (zoo.Summary of the runs, with the conditions) to the output directory.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/zoo"
	"github.com/fgn-paper/fgn/fgn"
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
	grid, cfg := zoo.DefaultGrid, zoo.DefaultConfig
	out := flag.String("out", filepath.Join("results", "zoo"), "output directory")
	models := flag.String("models", strings.Join(grid.Models, ","), "models to train, comma-separated")
	seeds := flag.String("seeds", "1,2,3", "seeds (held-out split, initial weights, batch order), comma-separated")
	adam := flag.String("adam", "0.001,0.003,0.01,0.03", "Adam's learning rates, comma-separated")
	withGrid := flag.Bool("grid", true, "train the FGN and SGN grid (false: only FGN(), SGN() and Adam)")
	policies := flag.String("policies", "constant,lm", "damping policies of the FGN and SGN grid, comma-separated")
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "training epochs per run")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "batch size")
	flag.Parse()
	grid.Models = strings.Split(*models, ",")
	grid.Seeds = nil
	for _, s := range strings.Split(*seeds, ",") {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
		grid.Seeds = append(grid.Seeds, seed)
	}
	var chosen []fgn.DampingPolicy
	for _, name := range strings.Split(*policies, ",") {
		k := slices.IndexFunc(grid.Policies, func(p fgn.DampingPolicy) bool { return p.String() == name })
		if k < 0 {
			return fmt.Errorf("-policies: unknown damping policy %q (want constant or lm)", name)
		}
		chosen = append(chosen, grid.Policies[k])
	}
	grid.Policies = chosen
	grid.AdamRates = nil
	for _, s := range strings.Split(*adam, ",") {
		lr, err := strconv.ParseFloat(s, 64)
		if err != nil || !(lr > 0) {
			return fmt.Errorf("-adam: learning rate %q is not a number > 0", s)
		}
		grid.AdamRates = append(grid.AdamRates, lr)
	}
	if !*withGrid {
		grid.LearningRates = nil
	}
	for _, name := range grid.Models {
		if _, err := zoo.ModelByName(name); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	be, err := backend.New()
	if err != nil {
		return err
	}
	start := time.Now()
	load := report.LoadAverage()
	runs, err := zoo.Sweep(be, grid, cfg, func(done, total int, r zoo.Result) {
		fmt.Fprintf(os.Stderr, "[%d/%d] %s, %s, seed %d: held-out accuracy %.1f%%\n",
			done, total, r.Model, r.Optimizer, r.Seed, 100*r.Accuracy)
	})
	if err != nil {
		return err
	}
	report.Provenance(runs, be, fmt.Sprintf("%d epochs of batches of %d", cfg.Epochs, cfg.Batch),
		strings.Join(append([]string{"go run ./experiments/zoo/sweep"}, os.Args[1:]...), " "), start)
	runs.Comment("load", fmt.Sprintf("1-, 5-, 15-minute load averages %s at start, %s at end", load, report.LoadAverage()))
	if err := runs.Write(filepath.Join(*out, "runs.csv")); err != nil {
		return err
	}
	var summary bytes.Buffer
	for _, kv := range runs.Comments {
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
	fmt.Printf("wrote %s and %s\n", filepath.Join(*out, "runs.csv"), path)
	return nil
}
