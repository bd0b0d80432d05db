package fgn

import (
	"fmt"
	"math"
	"path"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Optimizer is a damped Gauss-Newton optimizer for a classifier trained with softmax
// cross-entropy: FGN (sec. 4, Algorithm 1) or the SGN baseline (full softmax GGN).
//
// It plays the role of GoMLX's optimizer.Interface, but its curvature needs more than the scalar
// loss: UpdateGraph takes the linearised logit map and the labels. Build lin from the current
// values of the model's trainable variables (v.NodeValue(g)): Linearize(logits, params) for any
// model (JVP/VJP closures, Algorithm 1), or NewAffineHead(h, W, bias) for an affine head, which
// FGN solves with the closed-form row Gram of appendix F.2 (or matrix-free, see MatrixFree).
type Optimizer interface {
	// UpdateGraph builds one step w ← w + α d: it computes the damped direction d at the current
	// parameters lin.Params(), which must be the current node values of trainable variables of
	// scope, and sets those variables to their updated values. The returned Direction reports the
	// batch loss (before the step), CG iterations and residual, and the means of p_† and ξ.
	// When Direction.Finite is false (a NaN or Inf in the loss, the direction or the CG residual,
	// e.g. from a non-finite feature), the step leaves every parameter and every state variable
	// unchanged.
	//
	// It is a graph-building function and panics on error.
	UpdateGraph(scope *model.Scope, lin Linearization, labels *Node) *Direction

	// Clear deletes the optimizer's state variables (warm-start vectors) from scope's store.
	Clear(scope *model.Scope) error
}

// Paper defaults (sec. 5, app. F.2), shared by FGN and SGN.
const (
	DefaultLearningRate    = 0.1  // step size α
	DefaultDamping         = 1.0  // constant damping λ
	DefaultCGMaxIterations = 5    // CG iteration cap
	DefaultCGTolerance     = 1e-5 // CG relative residual tolerance
)

// GNConfig configures an FGN or SGN optimizer. Create it with FGN or SGN, chain the setters, and
// finish with Done.
type GNConfig struct {
	fgn        bool
	alpha      float64
	cfg        Config
	warmStart  bool
	matrixFree bool
	scopeName  string
}

// FGN returns the configuration of the FGN optimizer with the paper's defaults: α = 0.1, λ = 1,
// at most 5 CG iterations, tolerance 1e-5, no warm start. Its state lives under the store scope
// "/FGNOptimizer".
func FGN() *GNConfig {
	return &GNConfig{fgn: true, alpha: DefaultLearningRate, cfg: DefaultConfig, scopeName: "FGNOptimizer"}
}

// SGN returns the configuration of the SGN baseline optimizer (full softmax GGN, parameter-space
// CG) with the paper's defaults: α = 0.1, λ = 1, at most 5 CG iterations, tolerance 1e-5, CG
// warm-started from the previous direction. Its state lives under the store scope "/SGNOptimizer".
func SGN() *GNConfig {
	return &GNConfig{alpha: DefaultLearningRate, cfg: DefaultConfig, warmStart: true, scopeName: "SGNOptimizer"}
}

// LearningRate sets the step size α > 0 (default 0.1).
func (c *GNConfig) LearningRate(alpha float64) *GNConfig { c.alpha = alpha; return c }

// Damping sets the constant damping λ > 0 (default 1).
func (c *GNConfig) Damping(lambda float64) *GNConfig { c.cfg.Lambda = lambda; return c }

// CGMaxIterations sets the CG iteration cap (default 5).
func (c *GNConfig) CGMaxIterations(n int) *GNConfig { c.cfg.CG.MaxIter = n; return c }

// CGTolerance sets the CG relative residual tolerance (default 1e-5).
func (c *GNConfig) CGTolerance(tol float64) *GNConfig { c.cfg.CG.Tol = tol; return c }

// CGStoppingRule sets FGN's CG stopping rule (default StopParameterResidual; the paper's
// Algorithm 1 is StopWhitenedRowResidual). SGN's parameter-space CG has one rule.
func (c *GNConfig) CGStoppingRule(rule StoppingRule) *GNConfig { c.cfg.CG.Rule = rule; return c }

// WarmStart sets whether CG starts from the previous step's solution (SGN default: true, the
// previous direction; FGN default: false — FGN's warm start is the previous row-space solution u,
// meaningful only for a fixed batch size).
func (c *GNConfig) WarmStart(on bool) *GNConfig { c.warmStart = on; return c }

// MatrixFree sets whether FGN applies the row operator matrix-free, by one VJP and one JVP of the
// margin map per CG iteration (eq. 4.8), also on an AffineHead. By default (false) FGN forms the
// closed-form b×b row Gram of an AffineHead once per step (appendix F.2) and iterates on it;
// other linearisations are always matrix-free. SGN ignores it.
func (c *GNConfig) MatrixFree(on bool) *GNConfig { c.matrixFree = on; return c }

// SaturationFloor sets the smallest curvature weight q that is whitened (see Config).
func (c *GNConfig) SaturationFloor(q float64) *GNConfig { c.cfg.SaturationFloor = q; return c }

// Scope sets the store scope under which the optimizer keeps its state.
func (c *GNConfig) Scope(name string) *GNConfig { c.scopeName = name; return c }

// Validate reports the first invalid setting.
func (c *GNConfig) Validate() error {
	switch {
	case !(c.alpha > 0) || math.IsInf(c.alpha, 0):
		return fmt.Errorf("fgn: learning rate α must be finite and > 0, got %g", c.alpha)
	case c.scopeName == "":
		return fmt.Errorf("fgn: empty optimizer scope name")
	}
	return c.cfg.Validate()
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

func (o *gnOptimizer) UpdateGraph(scope *model.Scope, lin Linearization, labels *Node) *Direction {
	g := labels.Graph()
	vars := trainableVariables(scope, g, lin.Params())
	var warm []*model.Variable
	var x0 Vec
	if o.c.warmStart {
		var stateShapes []shapes.Shape
		if o.c.fgn { // the row-space solution u, one entry per example
			z := lin.Logits().Shape()
			stateShapes = []shapes.Shape{shapes.Make(z.DType, z.Dim(0))}
		} else { // the previous direction
			for _, p := range lin.Params() {
				stateShapes = append(stateShapes, p.Shape())
			}
		}
		warm, x0 = o.warmStartState(scope, g, vars, stateShapes)
	}
	var dir *Direction
	switch head, affine := lin.(*AffineHead); {
	case !o.c.fgn:
		dir = SGNDirection(lin, labels, x0, o.c.cfg)
	case affine && !o.c.matrixFree:
		dir = FGNAffineDirection(head, labels, first(x0), o.c.cfg)
	default:
		dir = FGNDirection(lin, labels, first(x0), o.c.cfg)
	}
	// A step whose loss, direction or CG residual is not finite changes nothing (Direction.Finite).
	for k, v := range warm {
		v.SetNodeValue(keepUnless(dir.Finite, StopGradient(dir.Solution[k]), x0[k]))
	}
	for k, v := range vars {
		p := lin.Params()[k]
		alpha := Scalar(g, p.DType(), o.c.alpha)
		v.SetNodeValue(keepUnless(dir.Finite, Add(p, Mul(alpha, dir.D[k])), p))
	}
	return dir
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

// trainableVariables maps each parameter node to the trainable variable of scope whose current
// node value it is.
func trainableVariables(scope *model.Scope, g *Graph, params Vec) []*model.Variable {
	vars := make([]*model.Variable, len(params))
	for v := range scope.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		node := v.NodeValue(g)
		for k, p := range params {
			if p == node {
				vars[k] = v
			}
		}
	}
	for k, v := range vars {
		if v == nil {
			exceptions.Panicf("fgn: parameter %d (%s) of the linearisation is not the current value of a trainable "+
				"variable of scope %q: build it from v.NodeValue(g)", k, params[k].Shape(), scope.Scope())
		}
	}
	return vars
}

// keepUnless returns updated where ok (a boolean scalar) holds, else current.
func keepUnless(ok, updated, current *Node) *Node {
	return Where(BroadcastToDims(ok, updated.Shape().Dimensions...), updated, current)
}

func first(v Vec) *Node {
	if v == nil {
		return nil
	}
	return v[0]
}
