package train

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn"
)

// traceColumns are the CSV columns of a trace, in Point's field order.
var traceColumns = []string{"step", "epoch", "opt_seconds", "train_loss", "eval_loss", "eval_accuracy",
	"cg_iterations", "cg_residual", "mean_p_dagger", "mean_xi", "skipped_steps",
	"damping", "damping_next", "rho", "predicted_decrease", "actual_decrease", "step_accepted", "rejected_steps"}

// float32Columns are the trace columns whose values are float32 outputs of the graph (widened
// in Point): they are written in their shortest float32 form (report.Format) and narrowed back
// when read, so that a trace read back equals the one written.
var float32Columns = []string{"train_loss", "eval_loss", "eval_accuracy", "cg_residual", "mean_p_dagger", "mean_xi",
	"damping", "damping_next", "rho", "predicted_decrease", "actual_decrease"}

// Table returns the trace as a report table whose comments record the run's configuration.
func (t *Trace) Table() *report.Table {
	tab := report.NewTable(traceColumns...)
	c := t.Config
	tab.Comment("method", string(c.Method))
	tab.Comment("model", c.Model.String())
	tab.Comment("learning_rate", report.Format(c.Hyper.LearningRate(c.Method)))
	if c.Method == method.Adam {
		a := c.Hyper.Adam
		tab.Comment("beta1", report.Format(a.Beta1))
		tab.Comment("beta2", report.Format(a.Beta2))
		tab.Comment("epsilon", report.Format(a.Epsilon))
	} else {
		s := c.Hyper.GN
		tab.Comment("damping", report.Format(s.Damping))
		tab.Comment("damping_policy", c.DampingPolicy.String())
		if lm, ok := c.DampingPolicy.(fgn.LMDamping); ok {
			tab.Comment("noise_floor", report.Format(lm.NoiseFloor))
			tab.Comment("floor_exponent", report.Format(lm.FloorExponent))
			tab.Comment("whole_variance", strconv.FormatBool(lm.WholeVariance))
			tab.Comment("noise_average", report.Format(lm.NoiseAverage))
		}
		tab.Comment("cg_max_iterations", strconv.Itoa(s.CG.MaxIterations))
		tab.Comment("cg_tolerance", report.Format(s.CG.Tolerance))
		tab.Comment("warm_start", strconv.FormatBool(s.WarmStart))
		tab.Comment("cg_stop_at_noise", strconv.FormatBool(s.CG.StopAtNoise))
		if c.Method != method.SGN {
			tab.Comment("cg_stopping_rule", s.CG.StoppingRule)
			tab.Comment("row_operator", s.RowOperator)
			tab.Comment("ggn_step_length", strconv.FormatBool(s.GGNStepLength))
		}
		tab.Comment("scaled_damping", strconv.FormatBool(s.ScaledDamping))
		tab.Comment("scaled_damping_per_entry", strconv.FormatBool(s.ScaledDampingPerEntry))
		tab.Comment("momentum", report.Format(s.Momentum))
	}
	tab.Comment("classes", strconv.Itoa(t.Classes))
	tab.Comment("batch_size", strconv.Itoa(c.BatchSize))
	tab.Comment("epochs", strconv.Itoa(c.Epochs))
	tab.Comment("eval_every", strconv.Itoa(c.EvalEvery))
	tab.Comment("seed", strconv.FormatUint(c.Seed, 10))
	tab.Comment("backend", t.Backend)
	tab.Comment("written", time.Now().UTC().Format(time.RFC3339))
	tab.Comment("opt_seconds", "synchronised optimisation time only (no compilation, evaluation, logging or I/O)")
	for _, p := range t.Points {
		tab.Add(p.Step, p.Epoch, p.OptSeconds, float32(p.TrainLoss), float32(p.EvalLoss), float32(p.EvalAccuracy),
			p.CGIterations, float32(p.CGResidual), float32(p.MeanPDagger), float32(p.MeanXi), p.SkippedSteps,
			float32(p.Damping), float32(p.NextDamping), float32(p.Rho), float32(p.PredictedDecrease),
			float32(p.ActualDecrease), p.StepAccepted, p.RejectedSteps)
	}
	return tab
}

// PointsFromTable parses the points of a trace table written by Trace.Table.
func PointsFromTable(tab *report.Table) ([]Point, error) {
	cols := make([][]float64, len(traceColumns))
	for k, name := range traceColumns {
		var err error
		if cols[k], err = tab.Floats(name); err != nil {
			return nil, err
		}
		if slices.Contains(float32Columns, name) {
			for i, v := range cols[k] {
				cols[k][i] = float64(float32(v))
			}
		}
	}
	points := make([]Point, len(tab.Rows))
	for i := range points {
		step := cols[0][i]
		if step != float64(int(step)) {
			return nil, fmt.Errorf("trace row %d: step %v is not an integer", i, step)
		}
		points[i] = Point{Step: int(step), Epoch: cols[1][i], OptSeconds: cols[2][i], TrainLoss: cols[3][i],
			EvalLoss: cols[4][i], EvalAccuracy: cols[5][i], CGIterations: cols[6][i], CGResidual: cols[7][i],
			MeanPDagger: cols[8][i], MeanXi: cols[9][i], SkippedSteps: int(cols[10][i]), Damping: cols[11][i],
			NextDamping: cols[12][i], Rho: cols[13][i], PredictedDecrease: cols[14][i], ActualDecrease: cols[15][i],
			StepAccepted: cols[16][i], RejectedSteps: int(cols[17][i])}
	}
	return points, nil
}
