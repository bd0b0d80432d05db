package fgn

import (
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
	"k8s.io/klog/v2"
)

// Hyper-parameters read from the model scope by GNConfig.FromScope, GoMLX's convention for
// configuring optimizers (optimizer.ParamOptimizer, Adam's "adam_*" parameters). They are shared by
// FGN and SGN; a parameter that is not set keeps the configuration's value. DeclareParams sets
// them all to their defaults in a store, so that GoMLX's command-line settings
// (commandline.ParseSettings, the examples' -set flag) accept them.
//
// The step size is ParamLearningRate, not GoMLX's optimizer.ParamLearningRate ("learning_rate"):
// a configuration written for Adam holds Adam's step there (1e-3 or 1e-4 in GoMLX's examples), a
// step at which a Gauss-Newton method, whose direction already carries the curvature's scale
// (α = 1 is the full step), would barely move the model. For the same reason FGN and SGN do not
// read GoMLX's learning-rate variable (optimizer.LearningRateVar), which a checkpoint of an Adam
// run holds and GoMLX's learning-rate schedules (cosineschedule) set on Adam's scale: their α is the
// configuration's, the same at every step.
const (
	ParamLearningRate          = "fgn_learning_rate"            // float64: Settings.LearningRate (α)
	ParamDamping               = "fgn_damping"                  // float64: Settings.Damping (λ, or the initial λ)
	ParamDampingPolicy         = "fgn_damping_policy"           // string: "constant" (ConstantDamping) or "lm" (LevenbergMarquardt)
	ParamCGMaxIterations       = "fgn_cg_max_iterations"        // int: CGSettings.MaxIterations
	ParamCGTolerance           = "fgn_cg_tolerance"             // float64: CGSettings.Tolerance
	ParamCGStoppingRule        = "fgn_cg_stopping_rule"         // string: StopParameterResidual or StopWhitenedRowResidual
	ParamCGStopAtNoise         = "fgn_cg_stop_at_noise"         // bool: CGSettings.StopAtNoise
	ParamRowOperator           = "fgn_row_operator"             // string: CheaperRowOperator, ClosedFormGram or MatrixFree
	ParamGGNStepLength         = "fgn_ggn_step_length"          // bool: Settings.GGNStepLength
	ParamScaledDamping         = "fgn_scaled_damping"           // bool: Settings.ScaledDamping
	ParamScaledDampingPerEntry = "fgn_scaled_damping_per_entry" // bool: Settings.ScaledDampingPerEntry
	ParamMomentum              = "fgn_momentum"                 // float64: Settings.Momentum (β)
	ParamWarmStart             = "fgn_warm_start"               // bool: Settings.WarmStart
	ParamSaturationFloor       = "fgn_saturation_floor"         // float64: Settings.SaturationFloor
	ParamNoiseFloor            = "fgn_noise_floor"              // float64: LMDamping.NoiseFloor (κ) of the "lm" policy
	ParamFloorExponent         = "fgn_floor_exponent"           // float64: LMDamping.FloorExponent (p) of the "lm" policy
	ParamWholeVariance         = "fgn_whole_variance"           // bool: LMDamping.WholeVariance of the "lm" policy
	ParamNoiseAverage          = "fgn_noise_average"            // float64: LMDamping.NoiseAverage (β) of the "lm" policy
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

// DeclareParams sets each Param* hyper-parameter that the store's root scope does not set yet to
// its default, FGN()'s (which SGN() shares), with the type FromScope reads, so that a program using
// GoMLX's command-line settings accepts them: call it where the program sets its own defaults,
// before commandline.CreateSettingsFlag and commandline.ParseSettings, and "-set fgn_damping=0.1"
// reaches FromScope. Values a program set before are kept.
func DeclareParams(store *model.Store) {
	c := FGN()
	s := c.Settings()
	lm := LevenbergMarquardt()
	root := store.RootScope()
	for name, value := range map[string]any{
		ParamLearningRate:          s.LearningRate,
		ParamDamping:               s.Damping,
		ParamDampingPolicy:         c.damping.String(),
		ParamCGMaxIterations:       s.CG.MaxIterations,
		ParamCGTolerance:           s.CG.Tolerance,
		ParamCGStoppingRule:        s.CG.StoppingRule,
		ParamCGStopAtNoise:         s.CG.StopAtNoise,
		ParamRowOperator:           s.RowOperator,
		ParamGGNStepLength:         s.GGNStepLength,
		ParamScaledDamping:         s.ScaledDamping,
		ParamScaledDampingPerEntry: s.ScaledDampingPerEntry,
		ParamMomentum:              s.Momentum,
		ParamWarmStart:             s.WarmStart,
		ParamSaturationFloor:       s.SaturationFloor,
		ParamNoiseFloor:            lm.NoiseFloor,
		ParamFloorExponent:         lm.FloorExponent,
		ParamWholeVariance:         lm.WholeVariance,
		ParamNoiseAverage:          lm.NoiseAverage,
	} {
		if _, found := store.GetParam(name); !found {
			root.SetParam(name, value)
		}
	}
}

// FromScope sets the hyper-parameters that the scope (or its parents) sets: the Param* parameters
// above, those of the noise floor (ParamNoiseFloor, ParamFloorExponent, ParamWholeVariance,
// ParamNoiseAverage) only when the damping policy is Levenberg-Marquardt's (a constant λ has no
// floor). GoMLX's optimizer.ParamLearningRate is not read (see ParamLearningRate). It panics on a
// value of the wrong type or an unknown name, as GoMLX's AdamConfig.FromScope does; Done
// validates the values.
func (c *GNConfig) FromScope(scope *model.Scope) *GNConfig {
	c.s.LearningRate = model.GetParamOr(scope, ParamLearningRate, c.s.LearningRate)
	if lr, found := scope.GetParam(optimizer.ParamLearningRate); found {
		klog.V(1).Infof("fgn: %s does not read %s = %v, a first-order optimizer's step: its step size is %s = %g",
			c.name(), optimizer.ParamLearningRate, lr, ParamLearningRate, c.s.LearningRate)
	}
	c.s.Damping = model.GetParamOr(scope, ParamDamping, c.s.Damping)
	c.s.CG.MaxIterations = model.GetParamOr(scope, ParamCGMaxIterations, c.s.CG.MaxIterations)
	c.s.CG.Tolerance = model.GetParamOr(scope, ParamCGTolerance, c.s.CG.Tolerance)
	c.s.CG.StoppingRule = model.GetParamOr(scope, ParamCGStoppingRule, c.s.CG.StoppingRule)
	c.s.CG.StopAtNoise = model.GetParamOr(scope, ParamCGStopAtNoise, c.s.CG.StopAtNoise)
	c.s.RowOperator = model.GetParamOr(scope, ParamRowOperator, c.s.RowOperator)
	c.s.GGNStepLength = model.GetParamOr(scope, ParamGGNStepLength, c.s.GGNStepLength)
	c.s.ScaledDamping = model.GetParamOr(scope, ParamScaledDamping, c.s.ScaledDamping)
	c.s.ScaledDampingPerEntry = model.GetParamOr(scope, ParamScaledDampingPerEntry, c.s.ScaledDampingPerEntry)
	c.s.Momentum = model.GetParamOr(scope, ParamMomentum, c.s.Momentum)
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
	if lm, ok := c.damping.(LMDamping); ok {
		lm.NoiseFloor = model.GetParamOr(scope, ParamNoiseFloor, lm.NoiseFloor)
		lm.FloorExponent = model.GetParamOr(scope, ParamFloorExponent, lm.FloorExponent)
		lm.WholeVariance = model.GetParamOr(scope, ParamWholeVariance, lm.WholeVariance)
		lm.NoiseAverage = model.GetParamOr(scope, ParamNoiseAverage, lm.NoiseAverage)
		c.damping = lm
	}
	return c
}
