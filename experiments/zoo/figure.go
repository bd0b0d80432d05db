package zoo

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
)

// figureMethods are the curves of the time-to-accuracy figure, in the project's method styles.
var figureMethods = []struct {
	name string
	m    method.Method
}{{FGNDefault, method.FGN}, {SGNDefault, method.SGN}, {TunedAdamName, method.Adam}}

// Figure draws held-out accuracy against training time for FGN(), SGN() and tuned Adam, one
// panel per model of the task, and writes it to base.svg, base.png and base.pdf: each curve the
// mean over the seeds, before training and after each epoch, of the accuracy against the
// training seconds (compilation and evaluation excluded; Epoch.Seconds), with the
// time-to-accuracy target (tuned Adam's final mean less AccuracyTolerance) as a dashed line; the
// accuracy axis spans the accuracies after the first epoch. It returns the paths written.
func Figure(runs []*Run, task string, base string) ([]string, error) {
	s := index(runs)
	tuned := TunedAdam(runs)
	var panels []*plot.Plot
	for _, m := range s.models {
		if s.trainedTask(m) != task {
			continue
		}
		p := plot.New(m, "training time (s)", "held-out accuracy (%)")
		var curves []plotter.XYs
		for _, fm := range figureMethods {
			name := fm.name
			if name == TunedAdamName {
				name = tuned[m]
			}
			xs, ys := meanCurve(s.trained(m, name))
			if len(xs) == 0 {
				continue
			}
			style, _ := plot.MethodStyle(fm.m)
			label := fm.name
			if fm.name == TunedAdamName {
				label = fmt.Sprintf("Adam (lr %s)", tuned[m][len(adamPrefix):])
			}
			if err := plot.AddSeries(p, label, style, xs, ys); err != nil {
				return nil, err
			}
			xy := make(plotter.XYs, len(xs))
			for k := range xs {
				xy[k] = plotter.XY{X: xs[k], Y: ys[k]}
			}
			curves = append(curves, xy)
		}
		// The accuracy axis starts below the lowest accuracy after an epoch: the untrained model's
		// chance accuracy at time 0 would squeeze the curves' differences into a sliver.
		lowest, highest := math.Inf(1), math.Inf(-1)
		for _, c := range curves {
			for _, xy := range c[1:] {
				lowest, highest = min(lowest, xy.Y), max(highest, xy.Y)
			}
		}
		if !math.IsInf(lowest, 0) {
			p.Y.Min, p.Y.Max = max(0, lowest-2), min(100, highest+1)
		}
		if target := targetOf(s, tuned, m); !math.IsNaN(target) {
			plot.AddHLine(p, 100*target)
			xmin, xmax, _, _ := plotter.XYRange(slices.Concat(curves...))
			curves = append(curves, plotter.XYs{{X: xmin, Y: 100 * target}, {X: xmax, Y: 100 * target}})
		}
		plot.ClearLegend(p, plot.PanelWidth, plot.PanelHeight, curves...)
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("zoo: no runs of FGN(), SGN() or Adam on task %q to draw", task)
	}
	return plot.SaveRow(panels, plot.PanelWidth, plot.PanelHeight, base)
}

// trainedTask returns the task of model m's runs.
func (s *sweepRuns) trainedTask(m string) string {
	for _, o := range s.opts {
		if rs := s.runs[[2]string{m, o}]; len(rs) > 0 {
			return rs[0].Task
		}
	}
	return ""
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
