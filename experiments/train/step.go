package train

import (
	"fmt"
	"math"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/paper"
)

// StepConfig is one optimiser step of the experiments, an assembly of the vocabulary's axes: the
// method (curvature and FGN's row operator), the linearisation, the model and the
// hyper-parameters. The training loop (Run), Figure 1(a) (mechanism.StepTime) and the step
// benchmarks build their steps from it with NewStep, so that what they run and time is one step.
type StepConfig struct {
	Method method.Method
	// Linearization is how the logits are linearised: fgn.ExactProducts (the model's closed-form
	// products, an affine head's; "" means it too) or fgn.Autodiff.
	Linearization string
	Model         Model
	// Hyper are the method's hyper-parameters (start from method.Paper); the method fixes the
	// row operator.
	Hyper method.Hyper
	// DampingPolicy is SGN's and FGN's damping policy (nil: fgn.ConstantDamping, the paper's);
	// Hyper.GN.Damping is its initial λ.
	DampingPolicy fgn.DampingPolicy
}

// Validate reports the first invalid field of c, naming it.
func (c StepConfig) Validate() error {
	if _, err := method.ParseMethod(string(c.Method)); err != nil {
		return err
	}
	if err := c.Hyper.Validate(c.Method); err != nil {
		return err
	}
	if c.Method != method.Adam && c.DampingPolicy != nil {
		if err := c.DampingPolicy.Validate(c.Hyper.GN.Damping); err != nil {
			return err
		}
	}
	switch {
	case c.Linearization != "" && c.Linearization != fgn.ExactProducts && c.Linearization != fgn.Autodiff:
		return fmt.Errorf("unknown linearisation %q (want %q or %q)", c.Linearization, fgn.ExactProducts, fgn.Autodiff)
	case c.Model.Hidden < 0:
		return fmt.Errorf("hidden width must be ≥ 0, got %d", c.Model.Hidden)
	case c.Method == method.FGN && c.Model.Hidden > 0:
		return fmt.Errorf("%s needs an affine head's closed-form Gram; an MLP (hidden width %d) has none: use %s",
			method.FGN, c.Model.Hidden, method.FGNMatrixFree)
	case c.Method == method.FGN && c.Linearization == fgn.Autodiff:
		return fmt.Errorf("%s needs an affine head's exact products, not %s: use %s",
			method.FGN, c.Linearization, method.FGNMatrixFree)
	}
	return nil
}

// resolved returns c as a step uses it: the row operator fixed by the method, the exact products
// when no linearisation is set, and the constant damping policy when none is set.
func (c StepConfig) resolved() StepConfig {
	c.Hyper.GN.RowOperator = method.Paper(c.Method).GN.RowOperator
	if c.Linearization == "" {
		c.Linearization = fgn.ExactProducts
	}
	if c.DampingPolicy == nil {
		c.DampingPolicy = fgn.ConstantDamping{}
	}
	return c
}

// headLayouts are the layouts of an affine head's frozen features that a step takes as inputs
// after x and y, computed once per static batch: hᵀ for the head's VJPs (every method, Adam's
// gradient included), and the feature Gram h hᵀ + 1 for FGN's closed-form row Gram (app. F.2).
// With autodiff, or an MLP, there are none.
type headLayouts struct{ ht, gram bool }

func (c StepConfig) layouts() headLayouts {
	exact := c.Model.Hidden == 0 && c.Linearization == fgn.ExactProducts
	return headLayouts{ht: exact, gram: exact && c.Method == method.FGN}
}

// Step is one compiled optimiser step over fixed static batches of frozen features: the logits,
// the method's direction and the parameter update in one graph, with the parameters in model
// variables that stay on the device between steps.
type Step struct {
	exec          *model.Exec
	inputs        [][]any           // per batch: x, y and the batch's layouts
	layouts       []*tensors.Tensor // freed by Finalize
	layoutSeconds float64
}

// StepResult is what a step reports, read back to the host.
type StepResult struct {
	// Loss is the batch's mean cross-entropy before the step.
	Loss float64
	// CGIterations and CGResidual report the CG solve (both 0 for Adam); MeanPDagger and MeanXi
	// are the batch means of p_† and ξ.
	CGIterations, CGResidual, MeanPDagger, MeanXi float64
	// Damping and NextDamping are the damping λ of the step and the one it set for the next;
	// PredictedDecrease, ActualDecrease and Rho the decreases of the batch loss and their gain
	// ratio (fgn.DampingPolicy), NaN unless the damping policy is adaptive (all NaN for Adam).
	Damping, NextDamping, PredictedDecrease, ActualDecrease, Rho float64
	// StepLength is FGN's step length τ at the GGN's step length (fgn.Settings.GGNStepLength), NaN
	// for a step without it (SGN, Adam, FGN at full length).
	StepLength float64
	// Finite is false when the loss, the direction (Adam: the gradient or an updated value) or the
	// CG residual was not finite; Accepted is true when the step was taken. A step not taken
	// changes nothing but an adaptive damping policy's λ.
	Finite, Accepted bool
}

// NewStep builds the step of cfg for the model variables vars of store, the trainable variables
// it steps (W, bias for an affine head; W1, b1, W2, b2 for an MLP), on the static batches of
// features xs (b×d float32) and labels ys (b int32). It computes the layouts of every batch's
// frozen features that the step takes (hᵀ on an affine head with exact products, and the feature
// Gram h hᵀ + 1 for FGN (closed-form Gram)) once, timing them (LayoutSeconds), and compiles the
// step; Run then runs it on a batch. Adam (adamUpdate) steps with the gradient of
// paper.LossGradient, one VJP of the linearisation: in closed form on an affine head with exact
// products, by autodiff otherwise. Like FGN and SGN, it skips a step that is not finite.
func NewStep(be compute.Backend, store *model.Store, vars []*model.Variable, cfg StepConfig, xs, ys []*tensors.Tensor) (*Step, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(xs) == 0 || len(xs) != len(ys) {
		return nil, fmt.Errorf("a step needs static batches, one label vector per feature batch; got %d and %d", len(xs), len(ys))
	}
	cfg = cfg.resolved()
	var gn fgn.Optimizer
	switch cfg.Method {
	case method.Adam:
	case method.SGN:
		gn = fgn.SGN().WithSettings(cfg.Hyper.GN).DampingPolicy(cfg.DampingPolicy).Done()
	default:
		gn = fgn.FGN().WithSettings(cfg.Hyper.GN).DampingPolicy(cfg.DampingPolicy).Done()
	}
	s := &Step{inputs: make([][]any, len(xs))}
	for k := range xs {
		s.inputs[k] = []any{xs[k], ys[k]}
	}
	lay := cfg.layouts()
	for _, c := range []struct {
		on bool
		fn func(*Node) *Node
	}{{lay.ht, func(x *Node) *Node { return Transpose(x, 0, 1) }}, {lay.gram, paper.FeatureGram}} {
		if !c.on {
			continue
		}
		out, seconds, err := perBatch(be, xs, c.fn)
		if err != nil {
			s.Finalize()
			return nil, fmt.Errorf("laying out the features: %w", err)
		}
		s.layoutSeconds += seconds
		s.layouts = append(s.layouts, out...)
		for k := range s.inputs {
			s.inputs[k] = append(s.inputs[k], out[k])
		}
	}
	exec, err := model.NewExec(be, store, func(scope *model.Scope, in []*Node) []*Node {
		// A step graph is a training graph, as in train.Trainer: a backend may embed the
		// variables of other graphs as constants (see compat.go: compatVariablesAsConstants in package fgn).
		scope.Store().SetTraining(in[0].Graph(), true)
		var ht, gram *Node
		if lay.ht {
			ht = in[2]
		}
		if lay.gram {
			gram = in[3]
		}
		lin := cfg.Model.linearize(vars, in[0], cfg.Linearization, ht, gram)
		if cfg.Method == method.Adam {
			return adamStep(scope, vars, lin, in[1], cfg.Hyper.Adam)
		}
		return gnStep(scope, gn, lin, in[1])
	})
	if err != nil {
		s.Finalize()
		return nil, err
	}
	s.exec = exec
	inputShapes := make([]shapes.Shape, len(s.inputs[0]))
	for i, in := range s.inputs[0] {
		inputShapes[i] = in.(*tensors.Tensor).Shape()
	}
	if _, err := exec.Compile(inputShapes...); err != nil {
		s.Finalize()
		return nil, fmt.Errorf("compiling the %s step: %w", cfg.Method, err)
	}
	return s, nil
}

// LayoutSeconds is the time NewStep took to lay out the batches' features (0 when the step takes
// no layouts).
func (s *Step) LayoutSeconds() float64 { return s.layoutSeconds }

// Run runs one step on static batch k and reads its results back to the host, which
// synchronises the device: the time of a Run call is the step's synchronised time.
func (s *Step) Run(k int) (StepResult, error) {
	if k < 0 || k >= len(s.inputs) {
		return StepResult{}, fmt.Errorf("batch %d out of range [0, %d)", k, len(s.inputs))
	}
	outs, err := s.exec.Call(s.inputs[k]...)
	if err != nil {
		return StepResult{}, err
	}
	n := len(outs)
	r := StepResult{Finite: tensors.ToScalar[bool](outs[n-2]), Accepted: tensors.ToScalar[bool](outs[n-1])}
	v := scalars(outs[:n-2])
	r.Loss, r.CGIterations, r.CGResidual, r.MeanPDagger, r.MeanXi = v[0], v[1], v[2], v[3], v[4]
	r.Damping, r.NextDamping, r.PredictedDecrease, r.ActualDecrease, r.Rho = v[5], v[6], v[7], v[8], v[9]
	r.StepLength = v[10]
	outs[n-2].FinalizeAll()
	outs[n-1].FinalizeAll()
	return r, nil
}

// Finalize frees the compiled step and the layouts it holds.
func (s *Step) Finalize() {
	if s.exec != nil {
		s.exec.Finalize()
	}
	for _, t := range s.layouts {
		t.FinalizeAll()
	}
}

// gnStep builds the step of an fgn.Optimizer (FGN or SGN) and returns Step's outputs: loss, CG
// iterations, CG residual, mean p_†, mean ξ, λ, next λ, predicted and actual decrease, ρ, the
// step length τ, finite and accepted.
func gnStep(scope *model.Scope, gn fgn.Optimizer, lin fgn.Linearization, labels *Node) []*Node {
	dir := gn.UpdateGraphWithLinearization(scope, lin, labels)
	dd := dir.Damping
	orNaN := func(x *Node) *Node { // telemetry a constant damping policy does not measure
		if x == nil {
			return Scalar(labels.Graph(), dir.Loss.DType(), math.NaN())
		}
		return x
	}
	return []*Node{dir.Loss, ConvertDType(dir.Iterations, dir.Loss.DType()), dir.Residual, dir.MeanPDagger,
		dir.MeanXi, dd.Used, dd.Next, orNaN(dd.Predicted), orNaN(dd.Actual), orNaN(dd.Rho), orNaN(dir.StepLength),
		dir.Finite, dd.Accepted}
}

// adamStep builds Adam's step (adamUpdate) with hyper-parameters h on the batch gradient
// g = (1/b) J_zᵀ (p − y) of lin (paper.Margin.Gradient, as paper.LossGradient, eqs. 2.11, 3.8: one
// VJP, in closed form on an affine head, a reverse pass of autodiff otherwise) and returns Step's
// outputs (gnStep), with zero CG iterations and residual and NaN damping telemetry.
func adamStep(scope *model.Scope, vars []*model.Variable, lin fgn.Linearization, labels *Node, h method.AdamSettings) []*Node {
	g := labels.Graph()
	margin := paper.NewMargin(lin.Logits(), labels)
	loss := ReduceAllMean(margin.Loss)
	finite := adamUpdate(scope, vars, margin.Gradient(lin), h, loss)
	zero := ScalarZero(g, loss.DType())
	nan := Scalar(g, loss.DType(), math.NaN())
	return []*Node{loss, zero, zero, ReduceAllMean(margin.PDagger), ReduceAllMean(margin.Xi),
		nan, nan, nan, nan, nan, nan, finite, finite}
}

// perBatch computes fn(x) for every static batch x once, returning the results and the time it took.
func perBatch(be compute.Backend, xs []*tensors.Tensor, fn func(*Node) *Node) ([]*tensors.Tensor, float64, error) {
	exec, err := NewExec(be, fn)
	if err != nil {
		return nil, 0, err
	}
	defer exec.Finalize()
	if _, err := exec.Compile(xs[0].Shape()); err != nil {
		return nil, 0, err
	}
	outs := make([]*tensors.Tensor, len(xs))
	start := time.Now()
	for k, x := range xs {
		out, err := exec.Call(x)
		if err != nil {
			return nil, 0, err
		}
		outs[k] = out[0]
	}
	_ = outs[len(outs)-1].Value() // reading the last result synchronises the device
	return outs, time.Since(start).Seconds(), nil
}
