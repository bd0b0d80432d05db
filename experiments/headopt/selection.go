package headopt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// DefaultGrid is the hyper-parameter grid of the selection; it contains the paper's chosen
// values (Adam α = 3·10⁻⁴; SGN and FGN α = 0.1, λ = 1). CG keeps the paper's budget of 5
// iterations and tolerance 10⁻⁵.
func DefaultGrid() map[method.Method][]method.Hyper {
	grid := map[method.Method][]method.Hyper{}
	for _, a := range []float64{1e-4, 3e-4, 1e-3, 3e-3} {
		h := method.Paper(method.Adam)
		h.Adam.LearningRate = a
		grid[method.Adam] = append(grid[method.Adam], h)
	}
	for _, m := range []method.Method{method.SGN, method.FGN} {
		for _, a := range []float64{0.03, 0.1, 0.3} {
			for _, l := range []float64{0.1, 1, 10} {
				h := method.Paper(m)
				h.GN.LearningRate, h.GN.Damping = a, l
				grid[m] = append(grid[m], h)
			}
		}
	}
	return grid
}

// Candidate is one grid point's validation result.
type Candidate struct {
	Method       method.Method `json:"method"`
	LearningRate float64       `json:"learning_rate"`
	Damping      float64       `json:"damping,omitempty"`
	ValAccuracy  float64       `json:"val_accuracy"`
	ValCE        float64       `json:"val_ce"`
	// Error is why the candidate failed (for example divergence); such candidates are skipped.
	Error string `json:"error,omitempty"`
}

// Selection is the result of the hyper-parameter search, the file that the final runs read.
type Selection struct {
	// DataTag is Data.Tag of the data selected on; a final run on other data refuses the file.
	DataTag            string                         `json:"data_tag"`
	Data               string                         `json:"data"`
	Profile            string                         `json:"profile"`
	Epochs             int                            `json:"epochs"`
	ValidationFraction float64                        `json:"validation_fraction"`
	SplitSeed          uint64                         `json:"split_seed"`
	Criterion          string                         `json:"criterion"`
	Backend            string                         `json:"backend"`
	Date               string                         `json:"date"`
	Chosen             map[method.Method]method.Hyper `json:"chosen"`
	Candidates         []Candidate                    `json:"candidates"`
}

// SelectConfig configures the search.
type SelectConfig struct {
	Profile Profile
	Grid    map[method.Method][]method.Hyper
	// Epochs of each candidate run (0: the profile's).
	Epochs int
	// ValidationFraction of every class of the training split is held out (stratified); the
	// test split is never used.
	ValidationFraction float64
	// Seed seeds the split and the candidate runs.
	Seed        uint64
	RunProgress func(k, n int, m method.Method, seed uint64) func(done, total int)
	Log         io.Writer
}

// Select grid-searches each method's hyper-parameters on a stratified validation split carved
// from the training split only (features.StratifiedSplit), standardised with the remaining
// training part's mean and std. Each candidate is trained once (seed cfg.Seed) with the
// profile's batch size and evaluation cadence; the criterion is the validation accuracy after
// the last epoch, ties broken by the lower validation cross-entropy.
func Select(be compute.Backend, cfg SelectConfig, d *Data) (*Selection, error) {
	p := cfg.Profile
	epochs := orDefault(cfg.Epochs, p.Epochs)
	fit, val, err := features.StratifiedSplit(d.Train, cfg.ValidationFraction, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("headopt: validation split: %w", err)
	}
	fit, vals, err := standardized(fit, val)
	if err != nil {
		return nil, err
	}
	val = vals[0]
	sel := &Selection{DataTag: d.Tag(), Data: d.Source, Profile: p.Name, Epochs: epochs,
		ValidationFraction: cfg.ValidationFraction, SplitSeed: cfg.Seed,
		Criterion: "validation accuracy after the last epoch; ties: lower validation cross-entropy",
		Date:      time.Now().UTC().Format(time.RFC3339), Chosen: map[method.Method]method.Hyper{}}
	total := 0
	for _, m := range p.Methods {
		if len(cfg.Grid[m]) == 0 {
			return nil, fmt.Errorf("headopt: the selection grid has no candidates for %s", m)
		}
		total += len(cfg.Grid[m])
	}
	k := 0
	for _, m := range p.Methods {
		best := -1
		for _, h := range cfg.Grid[m] {
			k++
			rc := train.Config{Method: m, Hyper: h, Classes: d.Classes, BatchSize: p.BatchSize, Epochs: epochs,
				EvalEvery: p.EvalEvery, Seed: cfg.Seed}
			if cfg.RunProgress != nil {
				rc.Progress = cfg.RunProgress(k, total, m, cfg.Seed)
			}
			c := Candidate{Method: m, LearningRate: h.LearningRate(m), ValAccuracy: math.NaN(), ValCE: math.NaN()}
			if m != method.Adam {
				c.Damping = h.GN.Damping
			}
			tr, err := train.Run(be, rc, fit, val)
			if err != nil {
				c.Error = err.Error()
			} else {
				last := tr.Points[len(tr.Points)-1]
				c.ValAccuracy, c.ValCE = last.EvalAccuracy, last.EvalLoss
				sel.Backend = tr.Backend
				if best < 0 || better(c, sel.Candidates[best]) {
					best = len(sel.Candidates)
					sel.Chosen[m] = h
				}
			}
			sel.Candidates = append(sel.Candidates, c)
			if cfg.Log != nil {
				status := fmt.Sprintf("val acc %6.2f%%, CE %.4f", 100*c.ValAccuracy, c.ValCE)
				if c.Error != "" {
					status = "failed: " + c.Error
				}
				fmt.Fprintf(cfg.Log, "candidate %d/%d %-4s α=%-6g λ=%-4g %s\n", k, total, m, c.LearningRate, c.Damping, status)
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("headopt: every %s candidate failed", m)
		}
	}
	return sel, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// better reports whether candidate a beats b: higher validation accuracy, then lower CE.
func better(a, b Candidate) bool {
	if a.ValAccuracy != b.ValAccuracy {
		return a.ValAccuracy > b.ValAccuracy
	}
	return a.ValCE < b.ValCE
}

// Write writes the selection as indented JSON, atomically. NaN scores of failed candidates
// are written as null.
func (s *Selection) Write(path string) error {
	type jsonCandidate struct {
		Method       method.Method `json:"method"`
		LearningRate float64       `json:"learning_rate"`
		Damping      float64       `json:"damping,omitempty"`
		ValAccuracy  *float64      `json:"val_accuracy"`
		ValCE        *float64      `json:"val_ce"`
		Error        string        `json:"error,omitempty"`
	}
	out := struct {
		*Selection
		Candidates []jsonCandidate `json:"candidates"`
	}{Selection: s}
	num := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	for _, c := range s.Candidates {
		out.Candidates = append(out.Candidates, jsonCandidate{c.Method, c.LearningRate, c.Damping, num(c.ValAccuracy), num(c.ValCE), c.Error})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// ReadSelection reads a selection file and returns the chosen hyper-parameters per method,
// checking that it was made on data with the given tag and covers every method. A key the
// format does not have (e.g. alpha or lambda, from a file written in an older format) is an
// error naming it.
func ReadSelection(path, dataTag string, methods []method.Method) (map[method.Method]method.Hyper, *Selection, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("headopt: configuration: %w", err)
	}
	var s Selection
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("headopt: configuration %s: %w", path, err)
	}
	// The file decodes, so a strict decode fails only on a key the format does not have, such as
	// the alpha and lambda of files written before the chosen hyper-parameters were method.Hyper.
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&Selection{}); err != nil {
		return nil, nil, fmt.Errorf("headopt: configuration %s: %w: not a key of the selection file format, which "+
			"changed: each method's choice is now Adam's settings (adam: learning_rate, beta1, beta2, epsilon) "+
			"or SGN's and FGN's (gn: learning_rate, damping, cg, row_operator, warm_start), where older files "+
			"had alpha and lambda, or these keys at the top level; rerun \"fgn headopt select\" to write the file anew",
			path, err)
	}
	if s.DataTag != dataTag {
		return nil, nil, fmt.Errorf("headopt: configuration %s was selected on %q data, this run is on %q", path, s.DataTag, dataTag)
	}
	chosen := map[method.Method]method.Hyper{}
	for _, m := range methods {
		c, ok := s.Chosen[m]
		if !ok {
			return nil, nil, fmt.Errorf("headopt: configuration %s has no choice for %s (it has %v)", path, m, slices.Sorted(maps.Keys(s.Chosen)))
		}
		if err := c.Validate(m); err != nil {
			return nil, nil, fmt.Errorf("headopt: configuration %s: %s: %w", path, m, err)
		}
		chosen[m] = c
	}
	return chosen, &s, nil
}
