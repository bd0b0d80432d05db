package zoo

import (
	"fmt"
	"math"
	"strings"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
)

// figureMethods are the curves of the time-to-accuracy figure, in the project's method styles.
var figureMethods = []struct {
	name string
	m    method.Method
}{{FGNDefault, method.FGN}, {SGNDefault, method.SGN}, {TunedAdamName, method.Adam}}

// Figure draws held-out accuracy against training time for FGN(), SGN() and tuned Adam, one
// panel per model, in rows of three (one row when the models are not a multiple of three), and
// writes it to base.svg, base.png and base.pdf: each curve the mean over the seeds, before
// training and after each epoch, of the accuracy against the training seconds (compilation and
// evaluation excluded; Epoch.Seconds), with the time-to-accuracy target (tuned Adam's final mean
// less AccuracyTolerance) as a dashed line; the accuracy axis spans the accuracies after the
// first epoch. It returns the paths written.
func Figure(runs []*Run, base string) ([]string, error) {
	s := index(runs)
	tuned := TunedAdam(runs)
	var panels []*plot.Plot
	for _, m := range s.models {
		p := plot.New(m, "training time (s)", "held-out accuracy (%)")
		lowest, highest, drawn := math.Inf(1), math.Inf(-1), false
		for _, fm := range figureMethods {
			name, label := fm.name, fm.name
			if name == TunedAdamName {
				name = tuned[m]
				label = "Adam (lr " + strings.TrimPrefix(name, adamPrefix) + ")"
			}
			xs, ys := meanCurve(s.trained(m, name))
			if len(xs) == 0 {
				continue
			}
			style, _ := plot.MethodStyle(fm.m)
			if err := plot.AddSeries(p, label, style, xs, ys); err != nil {
				return nil, err
			}
			drawn = true
			for _, y := range ys[1:] {
				lowest, highest = min(lowest, y), max(highest, y)
			}
		}
		if !drawn {
			continue
		}
		// The untrained model's chance accuracy at time 0 would squeeze the curves' differences
		// into a sliver: the axis starts below the lowest accuracy after an epoch.
		if !math.IsInf(lowest, 0) {
			p.Y.Min, p.Y.Max = max(0, lowest-2), min(100, highest+1)
		}
		if target := targetOf(s, tuned, m); !math.IsNaN(target) {
			plot.AddHLine(p, 100*target)
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("zoo: no runs of FGN(), SGN() or Adam to draw")
	}
	columns := len(panels)
	if columns%3 == 0 {
		columns = 3
	}
	var rows [][]*plot.Plot
	for k := 0; k < len(panels); k += columns {
		rows = append(rows, panels[k:k+columns])
	}
	return plot.SaveGrid(rows, plot.PanelWidth, plot.PanelHeight, base)
}

// meanCurve returns the mean over runs of the training seconds and the held-out accuracy (%) at
// each evaluation that every run reached.
func meanCurve(runs []*Run) (xs, ys []float64) {
	if len(runs) == 0 {
		return nil, nil
	}
	n := math.MaxInt
	for _, r := range runs {
		n = min(n, len(r.Epochs))
	}
	for k := range n {
		x, y := 0.0, 0.0
		for _, r := range runs {
			x += r.Epochs[k].Seconds / float64(len(runs))
			y += 100 * r.Epochs[k].HeldOutAccuracy / float64(len(runs))
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	return xs, ys
}
