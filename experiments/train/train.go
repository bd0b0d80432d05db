// Package train is the one training loop of the experiments: Adam, SGN or FGN on a classifier
// over fixed features, with the paper's protocol (app. F.2) — static batches from a one-time
// per-seed shuffle, the last batch padded by wrap-around, no reshuffle, periodic evaluation on
// a held-out split — and a wall clock that counts only synchronised optimisation time.
//
// Compilation happens once, before the clock starts; every step reuses the compiled graph,
// and each step's outputs are read back to the host (which synchronises the device) inside the
// timed region. Evaluation, logging and I/O are outside it.
package train

import (
	"fmt"
	"math"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// Config configures one training run.
type Config struct {
	Method method.Method
	// Settings are the method's hyper-parameters (start from DefaultSettings); the method fixes
	// the row operator. Adam uses only the learning rate.
	Settings fgn.Settings
	// DampingPolicy is SGN's and FGN's damping policy (nil: fgn.ConstantDamping, the paper's);
	// Settings.Damping is its initial λ.
	DampingPolicy fgn.DampingPolicy
	Model         Model
	// Classes is the number of classes C; 0 infers it from the largest label of both splits.
	Classes int
	// BatchSize, Epochs: the run takes Epochs·⌈N/BatchSize⌉ steps.
	BatchSize, Epochs int
	// EvalEvery is the number of steps between evaluations; there is one at step 0 and one
	// after the last step.
	EvalEvery int
	// Seed sets the model initialisation and the one-time shuffle.
	Seed uint64
	// Progress, when set, is called after every step with the number of steps done and the total.
	Progress func(done, total int)

	// beforeEval, when set, runs before each evaluation (tests make evaluation slow with it).
	beforeEval func()
}

// Resolved returns c as a run uses it: the row operator fixed by the method, and the constant
// damping policy when none is set. Traces record it.
func (c Config) Resolved() Config {
	c.Settings.RowOperator = method.DefaultSettings(c.Method).RowOperator
	if c.DampingPolicy == nil {
		c.DampingPolicy = fgn.ConstantDamping{}
	}
	return c
}

// Point is one evaluation of a run.
type Point struct {
	Step  int
	Epoch float64
	// OptSeconds is the synchronised optimisation time spent in steps 1..Step (plus, for FGN on
	// an affine head, the one-time feature Gram precomputation).
	OptSeconds float64
	// TrainLoss is the mean cross-entropy over the whole training split; EvalLoss and
	// EvalAccuracy are over the held-out split.
	TrainLoss, EvalLoss, EvalAccuracy float64
	// CGIterations is the mean number of CG iterations over the steps since the previous point
	// (0 for Adam); CGResidual, MeanPDagger and MeanXi are those of the last step's batch.
	CGIterations, CGResidual, MeanPDagger, MeanXi float64
	// SkippedSteps counts the steps 1..Step whose loss, direction or CG residual was not finite;
	// such a step leaves the model and the optimizer state unchanged.
	SkippedSteps int
	// Damping and NextDamping are the damping λ of the last step and the one it set for the next;
	// Rho, PredictedDecrease and ActualDecrease its gain ratio and the decreases of the batch loss
	// it is the ratio of (fgn.DampingPolicy), NaN unless the damping policy is adaptive;
	// StepAccepted is 1 when the last step was taken, else 0 (all NaN for Adam but StepAccepted).
	Damping, NextDamping, Rho, PredictedDecrease, ActualDecrease, StepAccepted float64
	// RejectedSteps counts the finite steps 1..Step that an adaptive damping policy rejected for
	// increasing the batch loss; such a step changes only λ.
	RejectedSteps int
}

// Trace is the result of a run.
type Trace struct {
	Config  Config // with the row operator and damping policy the run used
	Backend string // backend and device (backend.Describe)
	Classes int
	Points  []Point
}

// Validate checks the configuration and the data of a run (as Run does before any
// computation) and returns the number of classes the run uses.
func (c Config) Validate(trainSet, evalSet *features.Set) (classes int, err error) {
	if _, err := method.ParseMethod(string(c.Method)); err != nil {
		return 0, err
	}
	if err := c.Settings.Validate(); err != nil {
		return 0, err
	}
	if c.Method != method.Adam && c.DampingPolicy != nil {
		if err := c.DampingPolicy.Validate(c.Settings.Damping); err != nil {
			return 0, err
		}
	}
	switch {
	case c.Model.Hidden < 0:
		return 0, fmt.Errorf("hidden width must be ≥ 0, got %d", c.Model.Hidden)
	case c.Method == method.FGN && c.Model.Hidden > 0:
		return 0, fmt.Errorf("%s needs an affine head's closed-form Gram; an MLP (hidden width %d) has none: use %s",
			method.FGN, c.Model.Hidden, method.FGNMatrixFree)
	case c.Epochs < 1:
		return 0, fmt.Errorf("epochs must be ≥ 1, got %d", c.Epochs)
	case c.EvalEvery < 1:
		return 0, fmt.Errorf("evaluation interval must be ≥ 1 step, got %d", c.EvalEvery)
	case trainSet == nil || evalSet == nil:
		return 0, fmt.Errorf("a training and an evaluation split are required")
	case trainSet.D != evalSet.D:
		return 0, fmt.Errorf("training features have dimension %d, evaluation features %d", trainSet.D, evalSet.D)
	}
	classes = c.Classes
	if classes == 0 {
		classes = max(trainSet.Classes(), evalSet.Classes(), 2)
	}
	if classes < 2 {
		return 0, fmt.Errorf("need at least 2 classes, got %d", classes)
	}
	if err := trainSet.Validate("training split", classes); err != nil {
		return 0, err
	}
	if err := evalSet.Validate("evaluation split", classes); err != nil {
		return 0, err
	}
	if _, err := StaticBatches(trainSet.N, c.BatchSize, c.Seed); err != nil {
		return 0, err
	}
	return classes, nil
}

// Run trains a freshly initialised model on trainSet and evaluates it on evalSet, on backend be.
// Errors in the configuration or the data are returned before any computation.
func Run(be compute.Backend, cfg Config, trainSet, evalSet *features.Set) (*Trace, error) {
	classes, err := cfg.Validate(trainSet, evalSet)
	if err != nil {
		return nil, err
	}
	var trace *Trace
	var runErr error
	if err := exceptions.TryCatch[error](func() { trace, runErr = run(be, cfg, classes, trainSet, evalSet) }); err != nil {
		return nil, err
	}
	return trace, runErr
}

// run is Run after validation; GoMLX graph-building errors surface as panics, caught by Run.
func run(be compute.Backend, cfg Config, classes int, trainSet, evalSet *features.Set) (*Trace, error) {
	cfg = cfg.Resolved()
	batches, _ := StaticBatches(trainSet.N, cfg.BatchSize, cfg.Seed)
	store := model.NewStore()
	vars := cfg.Model.initialize(store.RootScope().In("model"), trainSet.D, classes, cfg.Seed)

	xs, ys := make([]*tensors.Tensor, len(batches)), make([]*tensors.Tensor, len(batches))
	for k, idx := range batches {
		xs[k], ys[k] = gather(trainSet, idx)
	}
	linear := cfg.Model.Hidden == 0
	cache := batchCache{transposed: linear && cfg.Method != method.Adam, gram: linear && cfg.Method == method.FGN}
	step, err := newStep(be, store, vars, cfg, cache)
	if err != nil {
		return nil, err
	}
	var cached [][]*tensors.Tensor // per-batch inputs after x and y, in newStep's order
	var optSeconds float64
	for _, c := range []struct {
		on bool
		fn func(*Node) *Node
	}{{cache.transposed, func(x *Node) *Node { return Transpose(x, 0, 1) }}, {cache.gram, fgn.FeatureGram}} {
		if !c.on {
			continue
		}
		out, seconds, err := perBatch(be, xs, c.fn)
		if err != nil {
			return nil, err
		}
		optSeconds += seconds
		cached = append(cached, out)
	}
	stepInputs := func(k int) []any {
		in := []any{xs[k], ys[k]}
		for _, c := range cached {
			in = append(in, c[k])
		}
		return in
	}
	inputShapes := []shapes.Shape{xs[0].Shape(), ys[0].Shape()}
	for _, c := range cached {
		inputShapes = append(inputShapes, c[0].Shape())
	}
	if _, err := step.Compile(inputShapes...); err != nil {
		return nil, fmt.Errorf("compiling the %s step: %w", cfg.Method, err)
	}
	eval := newEvaluator(be, store, vars, cfg.Model, trainSet, evalSet)

	trace := &Trace{Config: cfg, Backend: backend.Describe(be), Classes: classes}
	record := func(stepNum, skipped, rejected int, its float64, last []float64, accepted bool) error {
		if cfg.beforeEval != nil {
			cfg.beforeEval()
		}
		nan := math.NaN()
		p := Point{Step: stepNum, Epoch: float64(stepNum) / float64(len(batches)), OptSeconds: optSeconds,
			CGIterations: its, CGResidual: nan, MeanPDagger: nan, MeanXi: nan, SkippedSteps: skipped,
			Damping: nan, NextDamping: nan, Rho: nan, PredictedDecrease: nan, ActualDecrease: nan, StepAccepted: nan,
			RejectedSteps: rejected}
		if last != nil {
			p.CGResidual, p.MeanPDagger, p.MeanXi = last[2], last[3], last[4]
			p.Damping, p.NextDamping, p.PredictedDecrease, p.ActualDecrease, p.Rho = last[5], last[6], last[7], last[8], last[9]
			p.StepAccepted = 0
			if accepted {
				p.StepAccepted = 1
			}
		}
		var err error
		if p.TrainLoss, p.EvalLoss, p.EvalAccuracy, err = eval.evaluate(); err != nil {
			return err
		}
		trace.Points = append(trace.Points, p)
		return nil
	}
	if err := record(0, 0, 0, 0, nil, false); err != nil {
		return nil, err
	}
	total := cfg.Epochs * len(batches)
	var itsSum float64
	var itsCount, skipped, rejected int
	for s := 1; s <= total; s++ {
		start := time.Now()
		outs, err := step.Call(stepInputs((s - 1) % len(batches))...)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", s, err)
		}
		n := len(outs)
		finite, accepted := tensors.ToScalar[bool](outs[n-2]), tensors.ToScalar[bool](outs[n-1])
		stats := scalars(outs[:n-2]) // reading the outputs synchronises the device
		optSeconds += time.Since(start).Seconds()
		switch {
		case !finite:
			skipped++
		case !accepted:
			rejected++
		}
		itsSum += stats[1]
		itsCount++
		if s%cfg.EvalEvery == 0 || s == total {
			if err := record(s, skipped, rejected, itsSum/float64(itsCount), stats, accepted); err != nil {
				return nil, err
			}
			itsSum, itsCount = 0, 0
		}
		if cfg.Progress != nil {
			cfg.Progress(s, total)
		}
	}
	return trace, nil
}

// batchCache says which per-batch layouts of a linear head's frozen features a step takes as
// inputs after x and y, in this order: hᵀ for the head's VJPs (SGN and FGN), and the feature Gram
// h hᵀ + 1 for FGN's closed-form row Gram. Both are computed once per static batch.
type batchCache struct{ transposed, gram bool }

// newStep compiles (lazily) one optimisation step: inputs x, y and the cached layouts; outputs the
// batch loss, CG iterations, CG residual, mean p_†, mean ξ, the damping telemetry (λ, next λ,
// predicted and actual decrease, ρ; NaN where the method has none), whether the step was finite
// and whether it was taken (a step not taken changes nothing but an adaptive policy's λ).
func newStep(be compute.Backend, store *model.Store, vars []*model.Variable, cfg Config, cache batchCache) (*model.Exec, error) {
	m := cfg.Model
	var gn fgn.Optimizer
	var adam optimizer.Interface
	switch cfg.Method {
	case method.Adam:
		adam = optimizer.Adam().LearningRate(cfg.Settings.LearningRate).Done()
		if err := materializeState(be, store, vars, adam); err != nil {
			return nil, err
		}
	case method.SGN:
		gn = fgn.SGN().WithSettings(cfg.Settings).DampingPolicy(cfg.DampingPolicy).Done()
	default:
		gn = fgn.FGN().WithSettings(cfg.Settings).DampingPolicy(cfg.DampingPolicy).Done()
	}
	return model.NewExec(be, store, func(scope *model.Scope, in []*Node) []*Node {
		lin := m.linearize(vars, in[0])
		next := 2
		if cache.transposed {
			lin.(*fgn.AffineHead).HT = in[next]
			next++
		}
		if cache.gram {
			lin.(*fgn.AffineHead).FeatureGram = in[next]
		}
		if adam != nil {
			margin := fgn.NewMargin(lin.Logits(), in[1])
			loss := ReduceAllMean(margin.Loss)
			finite := guardedAdamUpdate(scope, adam, loss)
			zero := ScalarZero(in[0].Graph(), loss.DType())
			nan := Scalar(in[0].Graph(), loss.DType(), math.NaN())
			return []*Node{loss, zero, zero, ReduceAllMean(margin.PDagger), ReduceAllMean(margin.Xi),
				nan, nan, nan, nan, nan, finite, finite}
		}
		dir := gn.UpdateGraphWithLinearization(scope, lin, in[1])
		dd := dir.Damping
		orNaN := func(x *Node) *Node { // telemetry a constant damping policy does not measure
			if x == nil {
				return Scalar(in[0].Graph(), dir.Loss.DType(), math.NaN())
			}
			return x
		}
		return []*Node{dir.Loss, ConvertDType(dir.Iterations, dir.Loss.DType()), dir.Residual, dir.MeanPDagger,
			dir.MeanXi, dd.Damping, dd.NextDamping, orNaN(dd.Predicted), orNaN(dd.Actual), orNaN(dd.Rho), dir.Finite,
			dd.Accepted}
	})
}

// guardedAdamUpdate builds Adam's update of the model variables for loss, such that a step whose
// loss, gradient or updated values (parameters and moments) are not finite leaves every variable
// of the store unchanged (FGN and SGN do the
// same by themselves, see fgn.Direction.Finite). It returns that condition (a boolean scalar).
//
// Adam creates its state variables (moments, step counters) the first time its update is built;
// newStep builds it once into a throwaway graph first (materializeState), so that they are in the
// store and their values before the step are known here.
func guardedAdamUpdate(scope *model.Scope, adam optimizer.Interface, loss *Node) *Node {
	g := loss.Graph()
	before := make(map[*model.Variable]*Node)
	for v := range scope.Store().IterVariables() {
		before[v] = v.NodeValue(g)
	}
	grads := scope.BuildTrainableVariablesGradientsGraph(loss)
	finite := IsFinite(loss)
	for _, grad := range grads {
		finite = LogicalAnd(finite, IsFinite(ReduceAllSum(grad)))
	}
	adam.(gradientsUpdater).UpdateGraphWithGradients(scope, grads, loss.DType())
	var changed []*model.Variable
	for v := range before {
		if v.ChangedInGraph(g) {
			changed = append(changed, v)
			if v.DType().IsFloat() {
				finite = LogicalAnd(finite, IsFinite(ReduceAllSum(v.NodeValue(g))))
			}
		}
	}
	for _, v := range changed {
		updated := v.NodeValue(g)
		v.SetNodeValue(Where(BroadcastToDims(finite, updated.Shape().Dimensions...), updated, before[v]))
	}
	return finite
}

// materializeState builds opt's update of vars into a throwaway graph, which creates the
// optimizer's state variables in store.
func materializeState(be compute.Backend, store *model.Store, vars []*model.Variable, opt optimizer.Interface) error {
	probe, err := model.NewExec(be, store, func(scope *model.Scope, g *Graph) *Node {
		var loss *Node
		for _, v := range vars {
			term := ReduceAllSum(v.NodeValue(g))
			if loss == nil {
				loss = term
			} else {
				loss = Add(loss, term)
			}
		}
		opt.UpdateGraph(scope, g, loss)
		return loss
	})
	if err != nil {
		return err
	}
	if _, err := probe.Compile(); err != nil {
		return fmt.Errorf("creating the optimizer's state: %w", err)
	}
	return nil
}

// gradientsUpdater is the part of GoMLX's optimizers (Adam, SGD) that takes precomputed gradients.
type gradientsUpdater interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType)
}

// perBatch computes fn(x) for every static batch x once, returning the results and the time it took.
func perBatch(be compute.Backend, xs []*tensors.Tensor, fn func(*Node) *Node) ([]*tensors.Tensor, float64, error) {
	exec, err := NewExec(be, fn)
	if err != nil {
		return nil, 0, err
	}
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

// evaluator computes the mean cross-entropy on both splits and the accuracy on the held-out one.
type evaluator struct {
	exec         *model.Exec
	trainX, evlX *tensors.Tensor
	trainY, evlY *tensors.Tensor
}

func newEvaluator(be compute.Backend, store *model.Store, vars []*model.Variable, m Model,
	trainSet, evalSet *features.Set) *evaluator {
	e := &evaluator{}
	e.trainX, e.trainY = gather(trainSet, nil)
	e.evlX, e.evlY = gather(evalSet, nil)
	e.exec = model.MustNewExec(be, store, func(scope *model.Scope, x, y *Node) (*Node, *Node) {
		logits := m.linearize(vars, x).Logits()
		loss := ReduceAllMean(fgn.NewMargin(logits, y).Loss)
		correct := ConvertDType(Equal(ConvertDType(ArgMax(logits, -1), dtypes.Int32), y), loss.DType())
		return loss, ReduceAllMean(correct)
	})
	return e
}

func (e *evaluator) evaluate() (trainLoss, evalLoss, evalAcc float64, err error) {
	out, err := e.exec.Call(e.trainX, e.trainY)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("evaluating on the training split: %w", err)
	}
	trainLoss = scalars(out)[0]
	if out, err = e.exec.Call(e.evlX, e.evlY); err != nil {
		return 0, 0, 0, fmt.Errorf("evaluating on the held-out split: %w", err)
	}
	v := scalars(out)
	return trainLoss, v[0], v[1], nil
}

// gather returns the features and labels of the given examples (all when idx is nil) as
// float32 and int32 tensors.
func gather(s *features.Set, idx []int) (x, y *tensors.Tensor) {
	if idx == nil {
		return tensors.FromFlatDataAndDimensions(s.X, s.N, s.D), tensors.FromFlatDataAndDimensions(s.Y, s.N)
	}
	xd, yd := make([]float32, 0, len(idx)*s.D), make([]int32, len(idx))
	for j, i := range idx {
		xd = append(xd, s.Example(i)...)
		yd[j] = s.Y[i]
	}
	return tensors.FromFlatDataAndDimensions(xd, len(idx), s.D), tensors.FromFlatDataAndDimensions(yd, len(idx))
}

// scalars reads scalar float outputs to the host and frees them.
func scalars(outs []*tensors.Tensor) []float64 {
	v := make([]float64, len(outs))
	for i, t := range outs {
		switch x := t.Value().(type) {
		case float32:
			v[i] = float64(x)
		case float64:
			v[i] = x
		default:
			exceptions.Panicf("train: unexpected output %s", t.Shape())
		}
		_ = t.FinalizeAll()
	}
	return v
}
