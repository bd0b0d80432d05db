package fgn

import (
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Hyper-parameters read from the model scope by GNConfig.FromScope, GoMLX's convention for
// configuring optimizers (optimizer.ParamOptimizer, optimizer.ParamLearningRate, Adam's
// "adam_*" parameters). They are shared by FGN and SGN; a parameter that is not set keeps the
// configuration's value. The learning rate is GoMLX's optimizer.ParamLearningRate.
const (
	ParamDamping         = "fgn_damping"           // float64: Settings.Damping (λ, or the initial λ)
	ParamDampingPolicy   = "fgn_damping_policy"    // string: "constant" (ConstantDamping) or "lm" (LevenbergMarquardt)
	ParamCGMaxIterations = "fgn_cg_max_iterations" // int: CGSettings.MaxIterations
	ParamCGTolerance     = "fgn_cg_tolerance"      // float64: CGSettings.Tolerance
	ParamCGStoppingRule  = "fgn_cg_stopping_rule"  // string or StoppingRule: "parameter" or "whitened-row"
	ParamRowOperator     = "fgn_row_operator"      // string or RowOperator: "closed-form-gram" or "matrix-free"
	ParamWarmStart       = "fgn_warm_start"        // bool: Settings.WarmStart
	ParamSaturationFloor = "fgn_saturation_floor"  // float64: Settings.SaturationFloor
)

// init registers "fgn" and "sgn" in GoMLX's optimizer.KnownOptimizers, so that
// optimizer.FromScope selects them by the scope parameter optimizer.ParamOptimizer, as it selects
// "adam": FGN().FromScope(scope).Done() and SGN().FromScope(scope).Done(). Registration happens on
// import, as image decoders and database/sql drivers register themselves: a program that trains
// with FGN or SGN imports this package anyway for Loss, the loss they need.
func init() {
	optimizer.KnownOptimizers["fgn"] = func(scope *model.Scope) optimizer.Interface { return FGN().FromScope(scope).Done() }
	optimizer.KnownOptimizers["sgn"] = func(scope *model.Scope) optimizer.Interface { return SGN().FromScope(scope).Done() }
}

// FromScope sets the hyper-parameters that the scope (or its parents) sets: GoMLX's
// optimizer.ParamLearningRate and the Param* parameters above. It panics on a value of the wrong
// type or an unknown name, as GoMLX's AdamConfig.FromScope does; Done validates the values.
func (c *GNConfig) FromScope(scope *model.Scope) *GNConfig {
	c.s.LearningRate = model.GetParamOr(scope, optimizer.ParamLearningRate, c.s.LearningRate)
	c.s.Damping = model.GetParamOr(scope, ParamDamping, c.s.Damping)
	c.s.CG.MaxIterations = model.GetParamOr(scope, ParamCGMaxIterations, c.s.CG.MaxIterations)
	c.s.CG.Tolerance = model.GetParamOr(scope, ParamCGTolerance, c.s.CG.Tolerance)
	c.s.CG.StoppingRule = model.GetParamOr(scope, ParamCGStoppingRule, c.s.CG.StoppingRule)
	c.s.RowOperator = model.GetParamOr(scope, ParamRowOperator, c.s.RowOperator)
	c.s.WarmStart = model.GetParamOr(scope, ParamWarmStart, c.s.WarmStart)
	c.s.SaturationFloor = model.GetParamOr(scope, ParamSaturationFloor, c.s.SaturationFloor)
	if name := model.GetParamOr(scope, ParamDampingPolicy, ""); name != "" {
		switch name {
		case ConstantDamping{}.String():
			c.damping = ConstantDamping{}
		case LevenbergMarquardt().String():
			c.damping = LevenbergMarquardt()
		default:
			exceptions.Panicf("fgn: unknown damping policy %s=%q (want %q or %q)", ParamDampingPolicy, name,
				ConstantDamping{}, LevenbergMarquardt())
		}
	}
	return c
}
