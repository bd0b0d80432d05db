package fgn

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
	"k8s.io/klog/v2"
)

// Optimizer is a damped Gauss-Newton optimizer for a classifier trained with softmax
// cross-entropy, FGN (sec. 4, Algorithm 1) or the SGN baseline (full softmax GGN), as a GoMLX
// optimizer: it implements optimizer.Interface, so FGN().Done() trains a model wherever
// optimizer.Adam().Done() does (train.Trainer, train.Loop and its progress bar, checkpoints).
//
// Like Adam it steps the trainable variables of the scope it is given that the graph uses
// (scope.IterVariables()), and keeps its state in variables (the warm-start vectors, an adaptive
// policy's λ and the count of skipped steps under its own scope, GoMLX's global step), so a
// checkpoint restores it. Its step size α is its own (ParamLearningRate), not GoMLX's learning
// rate, which holds a first-order optimizer's step. Its curvature needs the batch's logits and
// labels, not only the loss:
//
//   - UpdateGraph(scope, g, loss), the Trainer's entry point, takes them from the graph, where
//     Loss (the loss function to give the Trainer) records them. The logits are linearised with
//     respect to the trainable variables by the closed form the model recorded with
//     RecordLinearization, if any. Otherwise, when they are an affine head z = h W (+ 1 bᵀ) over
//     features h that no trainable variable reaches (a dense layer, as layers.Dense and
//     DenseWithBias build it in either weight layout, on the input, on a backbone of
//     non-trainable variables, or behind a StopGradient), the step uses that AffineHead: its
//     exact products and, for FGN, its closed-form margin Gram (appendix F.2). The head is found
//     on the walk of the graph that Linearize's forward mode takes, and a model that is not
//     affine in its trainable variables is never taken for one. Any other logits are linearised
//     by autodiff (Linearize). klog at V(1) logs which, and Direction.Method names it.
//     loss may add GoMLX's regularisation terms to Loss's cross-entropy (see Regularised losses
//     below); it panics, naming the term, on any other loss.
//   - UpdateGraphWithLinearization(scope, lin, labels) is the entry point for a training step
//     built by hand: lin.Params() must be the current values (v.NodeValue(g)) of exactly those
//     trainable variables, in any order. It returns the step's Direction with its diagnostics.
//
// Regularised losses. GoMLX's layers add the terms of their regularisers to the loss the Trainer
// minimises (the scope's l2_regularization and l1_regularization, KAN's ConstantL1, added with
// train.AddRegularizationLoss): L2 terms c·‖w‖² and L1 terms c·‖A(w)‖₁ of an affine A. With R
// their sum, the step solves (H + D + λI) d = −(g + ∇R), with the exact gradient ∇R and D the
// exact Hessian of the L2 terms, 2c on each entry of the tensors they penalise. FGN keeps its
// b-dimensional solve by the push-through identity, with M = I + D/λ per tensor:
//
//	(bλI + J̃M⁻¹J̃ᵀ) u = r̃ − J̃M⁻¹∇R/λ,      d = −M⁻¹(∇R/λ + J̃ᵀu),
//
// one JVP more per step (the affine head's closed-form Gram is weighted per tensor). The L1
// terms, piecewise linear, have no Hessian where they are differentiable (almost everywhere):
// they add their gradient (a subgradient, sign(0) = 0) and no curvature, and GoMLX's L1 zeroes
// the weights below c after each step, as with any optimizer. An adaptive damping policy
// measures the decrease of the whole loss.
//
// The step's graph must read the variables as inputs: mark it as a training graph
// (scope.Store().SetTraining(g, true), as train.Trainer does) before reading them. Other graphs
// embed the variables as constants (see compat.go: compatVariablesAsConstants), and a step on
// constants would restart from the same parameters every time; the optimizer panics on a
// parameter that is a constant.
type Optimizer interface {
	optimizer.Interface

	// UpdateGraphWithLinearization builds one step w ← w + α d: it computes the damped direction
	// d at the current parameters lin.Params() and sets the variables to their updated values.
	// The returned Direction reports the batch loss (before the step), CG iterations and
	// residual, and the means of p_† and ξ. When Direction.Finite is false (a NaN or Inf in the
	// loss, the direction or the CG residual, e.g. from a non-finite feature or an overflow), the
	// step leaves every parameter and every warm-start state variable unchanged and adds 1 to
	// Telemetry's SkippedSteps; the global step still counts it, as train.Loop does.
	//
	// It is a graph-building function and panics on error.
	UpdateGraphWithLinearization(scope *model.Scope, lin Linearization, labels *Node) *Direction

	// Telemetry returns what the optimizer keeps of its steps in store's state variables: λ, the
	// last step's gain ratio ρ and FGN step length τ, and the counts of rejected and skipped
	// steps since the state was created or cleared (see Telemetry). Before the first step it
	// returns the initial λ, NaN for ρ and τ and no steps.
	Telemetry(store *model.Store) Telemetry
}

var _ optimizer.Interface = (*gnOptimizer)(nil)

// GNConfig configures an FGN or SGN optimizer. Create it with FGN or SGN, set what differs from
// the defaults, and finish with Done (or compute one Direction on its own).
//
// Each setting is set in one of two ways besides its Param* name (FromScope), for two kinds of
// caller: a chained setter (LearningRate, Damping, CGMaxIterations, ...), as GoMLX's optimizer
// builders take their settings (optimizer.Adam().LearningRate(1e-3).Done()), for a program that
// sets a few; or a field of Settings, the plain value that configuration files (JSON, YAML) and
// the experiments' sweeps hold, given all at once with WithSettings. A setter sets that field, so
// the two cannot disagree. The damping policy and the state's scope are not settings of a
// direction and have a setter only.
type GNConfig struct {
	fgn       bool
	s         Settings
	damping   DampingPolicy
	scopeName string
}

// FGN returns the configuration of the FGN optimizer with the library's defaults, chosen to train
// a model written with GoMLX's layers through train.Trainer without tuning (the model-zoo sweep
// of experiments/zoo, BENCHMARKS.md): DefaultSettings (step size α = 1, at most 5 CG iterations
// stopped on the parameter-space residual at tolerance 1e-5, the cheaper of the closed-form Gram
// and the matrix-free row operator, each tensor damped by its gradient's scale, no warm start)
// and LevenbergMarquardt damping from λ = 1 with its noise floor. The
// paper's runs (sec. 5, app. F.2) keep λ = 1 constant with α = 0.1 and stop CG on the whitened
// row residual: WithSettings(PaperSettings()).DampingPolicy(ConstantDamping{}) runs Algorithm 1
// exactly. Its state lives under the store scope "/FGNOptimizer".
func FGN() *GNConfig {
	return &GNConfig{fgn: true, s: DefaultSettings(), damping: LevenbergMarquardt(), scopeName: "FGNOptimizer"}
}

// SGN returns the configuration of the SGN baseline optimizer (full softmax GGN, parameter-space
// CG) with the library's defaults, those of FGN: DefaultSettings and LevenbergMarquardt damping
// from λ = 1, CG started from zero (SGN's CG has one stopping rule). The paper's SGN (app. F.2)
// keeps λ constant and warm-starts CG from the previous direction (WarmStart); with an adaptive λ
// that start, the solution of another batch's system at another λ, can point uphill and get the
// step rejected. Its state lives under the store scope "/SGNOptimizer".
func SGN() *GNConfig {
	return &GNConfig{s: DefaultSettings(), damping: LevenbergMarquardt(), scopeName: "SGNOptimizer"}
}

// WithSettings replaces every setting at once.
func (c *GNConfig) WithSettings(s Settings) *GNConfig { c.s = s; return c }

// Settings returns the current settings.
func (c *GNConfig) Settings() Settings { return c.s }

// LearningRate sets the step size α > 0 (default 1; the paper's is 0.1). It is FGN's and SGN's own
// (ParamLearningRate, "fgn_learning_rate"): they do not read GoMLX's learning-rate parameter or
// variable (optimizer.ParamLearningRate, optimizer.LearningRateVar), which hold a first-order
// optimizer's step (1e-3, 1e-4 for Adam) and which GoMLX's schedules (cosineschedule) set; see
// ParamLearningRate.
func (c *GNConfig) LearningRate(alpha float64) *GNConfig { c.s.LearningRate = alpha; return c }

// Damping sets the damping λ > 0 (default 1, the paper's): the constant λ, or an adaptive
// policy's initial λ.
func (c *GNConfig) Damping(lambda float64) *GNConfig { c.s.Damping = lambda; return c }

// DampingPolicy sets how λ evolves from step to step (default LevenbergMarquardt; the paper's is
// ConstantDamping). An adaptive policy keeps λ in the state variable "damping" under the
// optimizer's scope, and its telemetry beside it: "gain_ratio" (the last step's ρ) and
// "rejected_steps" (Optimizer.Telemetry reads them).
func (c *GNConfig) DampingPolicy(p DampingPolicy) *GNConfig { c.damping = p; return c }

// CGMaxIterations sets the CG iteration cap (default 5).
func (c *GNConfig) CGMaxIterations(n int) *GNConfig { c.s.CG.MaxIterations = n; return c }

// CGTolerance sets the CG relative residual tolerance (default 1e-5).
func (c *GNConfig) CGTolerance(tol float64) *GNConfig { c.s.CG.Tolerance = tol; return c }

// CGStopAtNoise sets whether CG stops once its residual is below the batch gradient's noise
// (default true; see CGSettings.StopAtNoise). The paper's CG (PaperSettings) does not.
func (c *GNConfig) CGStopAtNoise(on bool) *GNConfig { c.s.CG.StopAtNoise = on; return c }

// CGStoppingRule sets FGN's CG stopping rule (default StopParameterResidual; the paper's
// Algorithm 1 is StopWhitenedRowResidual). SGN's parameter-space CG has one rule.
func (c *GNConfig) CGStoppingRule(rule string) *GNConfig { c.s.CG.StoppingRule = rule; return c }

// GGNStepLength sets whether an FGN step takes its direction at the length where the damped
// multiclass GGN model is least along it (default true; see Settings.GGNStepLength). The paper's
// FGN (PaperSettings) does not. SGN ignores it. The last step's length τ is kept in the state
// variable "step_length" under the optimizer's scope (NaN when the step was not finite), for
// callers that step through UpdateGraph (Telemetry.StepLength). For an exact direction
// τ = dᵀ(H_FGN + λS)d / dᵀ(H_GGN + λS)d, the share of the GGN's damped curvature along the step
// that FGN's model holds (see Settings.GGNStepLength); a τ that stays far below 1 means FGN's
// true-vs-rest curvature misses most of the GGN's there (many classes whose probability is spread
// over the wrong ones): SGN is then the better choice (BENCHMARKS.md, "A larger batch").
func (c *GNConfig) GGNStepLength(on bool) *GNConfig { c.s.GGNStepLength = on; return c }

// ScaledDamping sets whether the optimizer damps each parameter tensor by λ times its
// damping metric's scale (see Settings.ScaledDamping).
func (c *GNConfig) ScaledDamping(on bool) *GNConfig { c.s.ScaledDamping = on; return c }

// ScaledDampingPerEntry sets whether the damping metric of ScaledDamping scales each parameter
// entry rather than each tensor (default false; see Settings.ScaledDampingPerEntry).
func (c *GNConfig) ScaledDampingPerEntry(on bool) *GNConfig { c.s.ScaledDampingPerEntry = on; return c }

// Momentum sets β ∈ [0, 1) of the exponential average of the steps that the optimizer steps
// along (default 0, each direction alone; see Settings.Momentum).
func (c *GNConfig) Momentum(beta float64) *GNConfig { c.s.Momentum = beta; return c }

// WarmStart sets whether CG starts from the previous step's solution (default false; the paper's
// SGN starts from the previous direction; FGN's warm start is the previous row-space solution u,
// meaningful only for a fixed batch size).
func (c *GNConfig) WarmStart(on bool) *GNConfig { c.s.WarmStart = on; return c }

// RowOperator sets how FGN applies its row operator (see GNConfig.Direction): CheaperRowOperator
// (default) takes whichever of the two below costs less for the step's shapes; ClosedFormGram
// forms the b×b margin Gram once per step when the linearisation provides it in closed form (a
// GramLinearization such as AffineHead: appendix F.2) and is matrix-free otherwise; MatrixFree
// applies it by one VJP and one JVP of the margin map per CG iteration (eq. 4.8) on every
// linearisation. SGN ignores it.
func (c *GNConfig) RowOperator(op string) *GNConfig { c.s.RowOperator = op; return c }

// SaturationFloor sets the curvature weight below which FGN counts a row as saturated (see
// Settings).
func (c *GNConfig) SaturationFloor(q float64) *GNConfig { c.s.SaturationFloor = q; return c }

// Scope sets the store scope under which the optimizer keeps its state.
func (c *GNConfig) Scope(name string) *GNConfig { c.scopeName = name; return c }

// Validate reports the first invalid setting.
func (c *GNConfig) Validate() error {
	switch {
	case c.scopeName == "":
		return fmt.Errorf("fgn: empty optimizer scope name")
	case c.damping == nil:
		return fmt.Errorf("fgn: no damping policy (use ConstantDamping{} for a constant λ)")
	}
	if err := c.s.Validate(); err != nil {
		return err
	}
	return c.damping.Validate(c.s.Damping)
}

// Done validates the configuration and returns the optimizer. It panics on an invalid
// configuration (as GoMLX's builders do); call Validate first to get an error instead.
func (c *GNConfig) Done() Optimizer {
	if err := c.Validate(); err != nil {
		panic(err)
	}
	o := *c
	return &gnOptimizer{o}
}

type gnOptimizer struct{ c GNConfig }

// UpdateGraph implements optimizer.Interface: one step on the batch whose logits and labels Loss
// recorded in g. loss must be the one Loss returned, plus the terms of GoMLX's L2 and L1
// regularisers (see Optimizer): the curvature is that of the softmax cross-entropy and of the L2
// terms, so any other loss is rejected.
func (o *gnOptimizer) UpdateGraph(scope *model.Scope, g *Graph, loss *Node) {
	rec := recordOf(g)
	switch {
	case rec.losses == 0:
		exceptions.Panicf("fgn: %s needs the batch's logits and labels: train with fgn.Loss as the loss function, "+
			"which records them (or build the step with UpdateGraphWithLinearization)", o.c.name())
	case rec.losses > 1:
		exceptions.Panicf("fgn: fgn.Loss was called %d times in one graph; %s steps on one softmax cross-entropy",
			rec.losses, o.c.name())
	}
	terms := lossTerms(loss, rec.loss, o.c.name())
	lin, kind := o.linearization(scope, g, rec)
	reg := recogniseRegularisation(terms, lin.Params(), o.c.name())
	o.step(scope, lin, rec.labels, reg).Method.Linearization = kind
}

// linearization returns the linearisation of the recorded logits that UpdateGraph steps on, and its
// name (Method.Linearization): the one the model recorded; else, when the logits are an affine head
// over features that no trainable variable reaches (recogniseAffineHead), that head, with its exact
// products and closed-form margin Gram; else autodiff (Linearize).
func (o *gnOptimizer) linearization(scope *model.Scope, g *Graph, rec *graphRecord) (Linearization, string) {
	if rec.lin != nil {
		if rec.lin.Logits() != rec.logits {
			exceptions.Panicf("fgn: the linearisation recorded with RecordLinearization is not of the logits given to fgn.Loss")
		}
		klog.V(1).Infof("fgn: %s steps on the linearisation the model recorded (%T)", o.c.name(), rec.lin)
		return rec.lin, Recorded
	}
	_, params := trainableVariables(scope, g)
	autodiff := Linearize(rec.logits, params)
	head, why := recogniseAffineHead(rec.logits, params)
	if head != nil {
		gram := ""
		if _, closed := o.c.s.closedFormGram(head, false, o.c.s.ScaledDamping && o.c.s.ScaledDampingPerEntry); o.c.fgn && closed {
			gram = " and the closed-form margin Gram"
		}
		klog.V(1).Infof("fgn: %s recognised an affine head over features that no trainable variable reaches: "+
			"exact head products%s", o.c.name(), gram)
		return head, ExactProducts
	}
	klog.V(1).Infof("fgn: %s linearises the logits by autodiff: not an affine head (%s)", o.c.name(), why)
	return autodiff, Autodiff
}

func (o *gnOptimizer) UpdateGraphWithLinearization(scope *model.Scope, lin Linearization, labels *Node) *Direction {
	return o.step(scope, lin, labels, nil)
}

// step is UpdateGraphWithLinearization on the loss L = (1/b)Σφ(s_i) + R with the regulariser reg
// (nil for none).
func (o *gnOptimizer) step(scope *model.Scope, lin Linearization, labels *Node, reg *regularisation) *Direction {
	checkTrialLogits(lin, o.c.damping, o.c.name())
	g := labels.Graph()
	params := lin.Params()
	vars := variablesOf(scope, g, params)
	dtype := lin.Logits().DType()
	alpha := Scalar(g, dtype, o.c.s.LearningRate)
	globalStep := optimizer.IncrementGlobalStep(g, dtypes.Int64)
	var warm []*model.Variable
	var x0 Vec
	if o.c.s.WarmStart {
		var stateShapes []shapes.Shape
		if o.c.fgn { // the row-space solution u, one entry per example
			stateShapes = []shapes.Shape{shapes.Make(dtype, lin.Logits().Shape().Dim(0))}
		} else { // the previous direction
			for _, p := range params {
				stateShapes = append(stateShapes, p.Shape())
			}
		}
		warm, x0 = o.warmStartState(scope, g, vars, stateShapes)
	}
	var lambda *model.Variable
	var lambdaState *Node // λ's current value for an adaptive policy, nil for a constant λ
	if o.c.damping.Adaptive() {
		lambda = o.dampingState(scope, dtype)
		lambdaState = lambda.NodeValue(g)
	}
	var metric *dampingMetric
	if o.c.s.ScaledDamping {
		metric = o.newDampingMetric(scope, g, vars, params)
	}
	var damping dampingFn
	var wholeVariance *Node // LMDamping.WholeVariance's ν, nil when the policy estimates it along g
	var average *noiseAverage
	var ceGrad Vec // the cross-entropy's batch gradient, where the noise estimate formed it
	if lambdaState != nil {
		if lm, ok := o.c.damping.(LMDamping); ok && lm.WholeVariance {
			m := marginOf(lin.Logits(), labels)
			ceGrad = m.Gradient(lin)
			signs := randomSigns(globalStep, dtype, lin.Logits().Shape().Dim(0))
			v, signal := varianceEstimates(lin, m, ceGrad, signs, reg, reciprocals(sqrtEach(metric.scales())))
			if lm.NoiseAverage > 0 {
				wholeVariance, average = o.averageNoise(scope, v, signal, lm.NoiseAverage)
			} else {
				wholeVariance = noiseRatio(v, signal)
			}
		}
		damping = func(s batchScale) *Node {
			if wholeVariance != nil {
				s.noise = wholeVariance
			}
			return o.c.damping.Damping(lambdaState, s.curvature, s.noise)
		}
	}
	var dir *Direction
	if o.c.fgn {
		dir = fgnDirection(lin, labels, first(x0), o.c.s, damping, reg, metric.scales(), ceGrad)
	} else {
		dir = sgnDirection(lin, labels, x0, o.c.s, damping, reg, metric.scales(), ceGrad)
	}
	ggnLength := o.c.fgn && o.c.s.GGNStepLength
	var zd *Node // J_z d, for the step length, the momentum and an adaptive policy's model
	if ggnLength || o.c.s.Momentum > 0 || o.c.damping.Adaptive() {
		zd = lin.JVP(dir.D)
	}
	stepSize := alpha
	if ggnLength {
		dir.StepLength = ggnStepLength(lin, labels, zd, dir, reg)
		stepSize = Mul(alpha, dir.StepLength)
	}
	var zs *Node // J_z s for the step s, where formed
	updated := make(Vec, len(params))
	var momentum *stepAverage
	if o.c.s.Momentum > 0 {
		momentum = o.newStepAverage(scope, g, vars, params)
		tau := dir.StepLength
		if tau == nil {
			tau = OnesLike(alpha)
		}
		var s Vec
		s, zs = momentum.step(lin, dir.D, zd, tau, alpha)
		for k, p := range params {
			updated[k] = Add(p, s[k])
		}
	} else {
		// The step size is taken as 0 unless the direction is finite. keepUnless below is what
		// discards a non-finite step (0·NaN is NaN); this makes the scaling α d wait for Finite's
		// reduction over d, so that a backend that runs independent
		// operations concurrently may still scale d in place rather than hold a second copy.
		taken := Where(dir.Finite, stepSize, ZerosLike(stepSize))
		for k, p := range params {
			updated[k] = Add(p, Mul(ConvertDType(taken, p.DType()), dir.D[k]))
		}
		if zd != nil {
			zs = Mul(ConvertDType(stepSize, zd.DType()), zd)
		}
	}
	if wholeVariance != nil {
		dir.scale.noise = wholeVariance // the ν the damping was chosen with, for StepDamping
	}
	dir.Damping = o.stepDamping(lin, labels, dir, zs, updated, lambdaState, reg)
	if momentum != nil {
		momentum.update(dir.Finite, dir.Damping.Accepted)
	}
	// A step not taken (not finite, or rejected by an adaptive damping policy) changes nothing
	// but an adaptive policy's λ and the telemetry (recordGainRatio, the skipped steps); a
	// rejected one restarts the momentum's average (stepAverage.update).
	for k, v := range warm {
		v.SetNodeValue(keepUnless(dir.Damping.Accepted, StopGradient(dir.Solution[k]), x0[k]))
	}
	for k, v := range vars {
		v.SetNodeValue(keepUnless(dir.Damping.Accepted, updated[k], params[k]))
	}
	if metric != nil {
		metric.update(dir.grad, dir.Finite)
	}
	if average != nil {
		average.update(dir.Finite)
	}
	if lambda != nil {
		lambda.SetNodeValue(dir.Damping.Next)
		o.recordGainRatio(scope.Store(), dir)
	}
	if dir.StepLength != nil {
		o.recordStepLength(scope.Store(), dir)
	}
	skipped := o.skippedStepsVar(scope.Store())
	count := skipped.NodeValue(g)
	skipped.SetNodeValue(Where(dir.Finite, count, AddScalar(count, 1)))
	return dir
}

// recordGainRatio keeps an adaptive policy's telemetry in state variables beside "damping" under
// the optimizer's scope, for callers that step through UpdateGraph (train.Trainer), which returns
// no Direction: "gain_ratio", the last step's ρ (NaN when the step was not finite or its model
// predicted no decrease), and "rejected_steps", the int64 count of finite steps the policy
// rejected, since the state was created or cleared.
func (o *gnOptimizer) recordGainRatio(store *model.Store, dir *Direction) {
	scope := store.Scope(path.Join("/", o.c.scopeName))
	rho := dir.Damping.Rho
	v := scope.VariableWithValue("gain_ratio", shapes.CastAsDType(math.NaN(), rho.DType())).SetTrainable(false)
	v.SetNodeValue(Where(dir.Finite, rho, Scalar(rho.Graph(), rho.DType(), math.NaN())))
	rejected := scope.WithInitializer(initializer.Zero).VariableWithShape("rejected_steps", shapes.Make(dtypes.Int64)).
		SetTrainable(false)
	count := rejected.NodeValue(rho.Graph())
	rejected.SetNodeValue(Where(LogicalAnd(dir.Finite, LogicalNot(dir.Damping.Accepted)), AddScalar(count, 1), count))
}

// recordStepLength keeps an FGN step's length τ (Direction.StepLength) in the state variable
// "step_length" beside "damping" under the optimizer's scope, NaN when the step was not finite,
// for callers that step through UpdateGraph (see GNConfig.GGNStepLength).
func (o *gnOptimizer) recordStepLength(store *model.Store, dir *Direction) {
	tau := dir.StepLength
	v := store.Scope(path.Join("/", o.c.scopeName)).
		VariableWithValue("step_length", shapes.CastAsDType(math.NaN(), tau.DType())).SetTrainable(false)
	v.SetNodeValue(Where(dir.Finite, tau, Scalar(tau.Graph(), tau.DType(), math.NaN())))
}

// skippedStepsVar returns the counter of Telemetry's SkippedSteps, created as 0 on first use.
func (o *gnOptimizer) skippedStepsVar(store *model.Store) *model.Variable {
	return store.Scope(path.Join("/", o.c.scopeName)).WithInitializer(initializer.Zero).
		VariableWithShape("skipped_steps", shapes.Make(dtypes.Int64)).SetTrainable(false)
}

// stateVariable returns the optimizer's non-trainable state variable name under the store scope
// dir, created as zeros of shape on first use; it panics, naming it as what, when a variable of
// that name has another shape (a checkpoint of another model or setting).
func stateVariable(store *model.Store, dir, name string, shape shapes.Shape, what string) *model.Variable {
	v := store.Scope(dir).WithInitializer(initializer.Zero).VariableWithShape(name, shape).SetTrainable(false)
	if !v.Shape().Equal(shape) {
		exceptions.Panicf("fgn: %s %q is %s, the step needs %s", what, v.Path(), v.Shape(), shape)
	}
	return v
}

// warmStartState returns the (non-trainable) warm-start variables, created as zeros on first use,
// and their current values.
func (o *gnOptimizer) warmStartState(scope *model.Scope, g *Graph, vars []*model.Variable,
	stateShapes []shapes.Shape) ([]*model.Variable, Vec) {
	state := make([]*model.Variable, len(stateShapes))
	values := make(Vec, len(stateShapes))
	for k, shape := range stateShapes {
		var dir, name string
		if o.c.fgn {
			dir, name = path.Join("/", o.c.scopeName), "row_solution"
		} else {
			dir, name = path.Join("/", o.c.scopeName, vars[k].Scope()), vars[k].Name()+"_warm_start"
		}
		v := scope.Store().Scope(dir).WithInitializer(initializer.Zero).VariableWithShape(name, shape).SetTrainable(false)
		if !v.Shape().Equal(shape) {
			exceptions.Panicf("fgn: warm-start state %q has shape %s, the step needs %s (did the batch size change?)",
				v.Path(), v.Shape(), shape)
		}
		state[k], values[k] = v, v.NodeValue(g)
	}
	return state, values
}

func (o *gnOptimizer) Clear(scope *model.Scope) error {
	return scope.Store().DeleteVariablesInScope(path.Join("/", o.c.scopeName))
}

// trainableVariables returns the trainable variables of scope that g uses, the variables
// optimizer.Adam steps, and their current values, sorted by path: the store lists variables in
// creation order, or in any order after a checkpoint is loaded, and a fixed order keeps the
// step's floating-point sums, hence a restored run, reproducible.
func trainableVariables(scope *model.Scope, g *Graph) ([]*model.Variable, Vec) {
	var vars []*model.Variable
	for v := range scope.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v)
		}
	}
	if len(vars) == 0 {
		exceptions.Panicf("fgn: no trainable variable of scope %q is used by the graph", scope.Scope())
	}
	slices.SortFunc(vars, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	values := make(Vec, len(vars))
	for k, v := range vars {
		values[k] = v.NodeValue(g)
	}
	return vars, values
}

// variablesOf returns, for each parameter of a linearisation, the trainable variable whose
// current value it is. The parameters must be the current values of exactly the trainable
// variables of scope that g uses, in any order: the optimizer steps all of them, as Adam does.
func variablesOf(scope *model.Scope, g *Graph, params Vec) []*model.Variable {
	vars, values := trainableVariables(scope, g)
	byValue := make(map[*Node]*model.Variable, len(vars))
	for k, v := range vars {
		byValue[values[k]] = v
	}
	out := make([]*model.Variable, len(params))
	for k, p := range params {
		if p.Type() == NodeTypeConstant {
			exceptions.Panicf("fgn: parameter %d (%s) of the linearisation is a constant in this graph: mark the step's graph "+
				"as training (scope.Store().SetTraining(g, true), as train.Trainer does) before reading the variables, "+
				"so that the backend takes them as inputs", k, p.Shape())
		}
		if out[k] = byValue[p]; out[k] == nil {
			exceptions.Panicf("fgn: parameter %d (%s) of the linearisation is not the current value (v.NodeValue(g)) of "+
				"a trainable variable of scope %q, or is repeated", k, p.Shape(), scope.Scope())
		}
		delete(byValue, p)
	}
	if len(byValue) > 0 {
		var missing []string
		for _, v := range byValue {
			missing = append(missing, v.Path())
		}
		slices.Sort(missing)
		exceptions.Panicf("fgn: the linearisation has no parameter for the trainable variables %v of scope %q, which "+
			"the optimizer steps (mark variables it must not step with SetTrainable(false))", missing, scope.Scope())
	}
	return out
}

// name is the optimizer's name in messages.
func (c *GNConfig) name() string {
	if c.fgn {
		return "FGN"
	}
	return "SGN"
}

// keepUnless returns updated where ok (a boolean scalar) holds, else current. The scalar
// condition is not broadcast: Where selects whole operands on it (XLA's select takes a scalar
// predicate, the Go backend returns the chosen buffer in place), so no mask the size of the
// parameters is formed or read.
func keepUnless(ok, updated, current *Node) *Node {
	return Where(ok, updated, current)
}

func first(v Vec) *Node {
	if v == nil {
		return nil
	}
	return v[0]
}
