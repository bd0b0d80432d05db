package fgn

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Settings are the hyper-parameters of a damped Gauss-Newton step, FGN or SGN: the settings of
// the optimizers (FGN().WithSettings) and of the direction functions. They are plain values
// (an adaptive damping policy keeps its λ in the optimizer's state, not here). Struct tags give
// the names used in JSON and YAML files. Start from DefaultSettings or PaperSettings; a zero
// field is not a default.
type Settings struct {
	// LearningRate is the step size α > 0 of w ← w + α d (the direction functions ignore it).
	LearningRate float64 `json:"learning_rate" yaml:"learning_rate"`
	// Damping is λ > 0: the constant damping, or an adaptive policy's initial λ.
	Damping float64 `json:"damping" yaml:"damping"`
	// CG configures the inner solve.
	CG CGSettings `json:"cg" yaml:"cg"`
	// RowOperator is how FGN applies its row operator: ClosedFormGram (or ""), MatrixFree or
	// CheaperRowOperator (see Method and GNConfig.Direction; SGN ignores it).
	RowOperator string `json:"row_operator" yaml:"row_operator"`
	// GGNStepLength makes an FGN optimizer step s = ατd, τ ∈ (0, 1] the minimiser along FGN's
	// direction d of the damped multiclass GGN model: the GGN's curvature along the one direction
	// FGN solved for, which FGN's curvature underestimates (H_FGN ⪯ H_GGN), at the cost of one JVP
	// (none with an adaptive damping policy, which makes it anyway). An adaptive policy's gain
	// ratio is then measured on the GGN model. SGN, whose CG direction already minimises its model
	// along itself, and GNConfig.Direction ignore it.
	GGNStepLength bool `json:"ggn_step_length,omitempty" yaml:"ggn_step_length,omitempty"`
	// ScaledDamping makes an optimizer damp each parameter tensor w_k apart: Λ = λS, S = diag(s_k I),
	// s_k = (ρ_k/ρ̄)^{1/2}, ρ_k the root mean square of w_k's batch gradient over the previous
	// steps (a bias-corrected moving average of its mean square, with Adam's β₂ = 0.999) and ρ̄
	// its mean over all the parameters' entries; S = I on the first step. A tensor whose gradient
	// is larger is damped more, so that where the damping rules the step (the directions the
	// curvature leaves flat) the tensors move in proportion to their gradients' scale, as Adam's
	// do, rather than with the raw gradient. It keeps one number per tensor in the optimizer's
	// state and costs no Jacobian product, but one VJP with FGN's closed-form Gram. On in
	// DefaultSettings, chosen with LevenbergMarquardt's noise floor on the model zoo
	// (BENCHMARKS.md); off in PaperSettings. GNConfig.Direction, which keeps no state, ignores it.
	ScaledDamping bool `json:"scaled_damping,omitempty" yaml:"scaled_damping,omitempty"`
	// ScaledDampingPerEntry makes ScaledDamping's metric scale each parameter entry by its own
	// gradient's scale (Adam's second moment v̂ per entry, raised to the power ¼), rather than each
	// tensor by its tensor's: one more copy of the parameters in the optimizer's state, and FGN
	// then applies its row operator by matrix-free products (an affine head's closed-form Gram
	// takes per-tensor weights only). An entry whose gradient is rarely non-zero (an input
	// feature few examples have) is damped little and can grow large, which raises the held-out
	// cross-entropy at the same accuracy. Off in DefaultSettings (the model zoo's sweep,
	// BENCHMARKS.md); it applies with ScaledDamping only.
	ScaledDampingPerEntry bool `json:"scaled_damping_per_entry,omitempty" yaml:"scaled_damping_per_entry,omitempty"`
	// Momentum is β ∈ [0, 1) of an optimizer that steps along the exponential average of its
	// steps, as Adam averages its gradients: s_t = α m_t/(1 − βᵗ), m_t = β m_{t−1} + (1 − β) τ_t d_t,
	// with d_t the step's direction and τ_t its step length (FGN's GGN step length, 1 for SGN).
	// Averaged over about 1/(1 − β) steps, the batch gradients' noise in the directions falls
	// while a direction the batches agree on keeps its length. It keeps m in the optimizer's state
	// (one copy of the parameters) and costs one JVP more per step (J_z m_{t−1}, for the step's
	// model). An adaptive policy's gain ratio is measured on the GGN model of s_t, and a step it
	// rejects restarts the average (m ← 0, t ← 0). 0 (DefaultSettings, PaperSettings) steps
	// along each direction alone. GNConfig.Direction, which keeps no state, ignores it.
	Momentum float64 `json:"momentum,omitempty" yaml:"momentum,omitempty"`
	// WarmStart starts CG from the previous step's solution: the previous direction for SGN, the
	// previous row-space solution u for FGN (meaningful only for a fixed batch size).
	WarmStart bool `json:"warm_start" yaml:"warm_start"`
	// SaturationFloor is the curvature weight q_min below which a row counts as saturated (q_i =
	// p_★p_† < q_min): FGN's CG then takes its gradient start, which solves the damped system
	// exactly whatever the rows' margins (see GNConfig.Direction); it is also the floor of q in the
	// reference of the whitened row stopping rule. 0 selects the square of the dtype's machine
	// epsilon, below which r̃_i = √(p_†/p_★) exceeds 1/ε.
	SaturationFloor float64 `json:"saturation_floor,omitempty" yaml:"saturation_floor,omitempty"`
}

// CGSettings configures conjugate gradients.
type CGSettings struct {
	// MaxIterations caps the number of iterations (the paper's N_CG).
	MaxIterations int `json:"max_iterations" yaml:"max_iterations"`
	// Tolerance is the relative residual tolerance; StoppingRule says which residual.
	Tolerance float64 `json:"tolerance" yaml:"tolerance"`
	// StoppingRule is FGN's stopping rule, StopParameterResidual (or "") or
	// StopWhitenedRowResidual. SGN's CG runs in parameter space, where both rules are the same test
	// ‖(H_GGN + λI) d + g‖ ≤ Tolerance·‖g‖.
	StoppingRule string `json:"stopping_rule" yaml:"stopping_rule"`
	// StopAtNoise raises the parameter-space residual's tolerance to the batch gradient's relative
	// noise: CG stops once ‖(H + λI) d + g‖ ≤ max(Tolerance, √(ν/(1 + ν)))·‖g‖, ν ≤ 1 the
	// noise-to-signal ratio of the gradient along itself (see DampingPolicy; capped at 1 as the
	// damping's floor caps it), √(ν/(1 + ν)) ≤ 1/√2 the relative standard deviation of the batch
	// gradient along that direction. A direction solved
	// more exactly than the gradient it solves for is known costs products and buys nothing: an
	// inexact Newton step whose forcing term is the gradient's noise. It applies where the step
	// measures ν (an adaptive damping policy, or CG started from zero) and to the
	// StopParameterResidual rule; the whitened-row rule keeps Tolerance.
	StopAtNoise bool `json:"stop_at_noise,omitempty" yaml:"stop_at_noise,omitempty"`
}

// DefaultSettings returns this library's defaults, those of FGN() and SGN(): step size α = 1 (the
// library's: with FGN()'s adaptive damping, the full Gauss-Newton step; the paper's is 0.1), λ = 1
// (with FGN()'s Levenberg-Marquardt damping its initial value), at most N_CG = 5 CG iterations
// with tolerance 1e-5 (the paper's; sec. 5, app. F.2), CG stopped on the parameter-space residual
// (StopParameterResidual) rather than on Algorithm 1's whitened row residual, which a batch of
// confidently misclassified examples meets after one iteration far from the solution (see
// StopWhitenedRowResidual), and no more exactly than the batch gradient is known (StopAtNoise);
// FGN's step at the GGN's step length along its direction (GGNStepLength); each parameter tensor
// damped by its gradient's scale (ScaledDamping). The row operator is CheaperRowOperator (the
// closed-form Gram or the matrix-free products, whichever costs less for the step's shapes), the
// saturation floor the dtype's default, no warm start. The model-zoo sweep of experiments/zoo
// chose α and ScaledDamping (BENCHMARKS.md).
func DefaultSettings() Settings {
	s := PaperSettings()
	s.LearningRate = 1
	s.CG.StoppingRule = StopParameterResidual
	s.RowOperator = CheaperRowOperator
	s.CG.StopAtNoise = true
	s.GGNStepLength = true
	s.ScaledDamping = true
	return s
}

// PaperSettings returns the settings of the paper's Algorithm 1 with its hyper-parameters (sec. 5,
// app. F.2): α = 0.1, λ = 1, CG on the whitened row system with tolerance ε = 1e-5 on the
// whitened row residual (StopWhitenedRowResidual) and at most N_CG = 5 iterations, no warm start.
// The paper keeps λ constant (DampingPolicy(ConstantDamping{})), and its SGN warm-starts CG
// (WarmStart). The row operator is ClosedFormGram, the closed form of appendix F.2 on the affine
// head; it changes how K is applied, not the step.
func PaperSettings() Settings {
	return Settings{LearningRate: 0.1, Damping: 1, RowOperator: ClosedFormGram,
		CG: CGSettings{MaxIterations: 5, Tolerance: 1e-5, StoppingRule: StopWhitenedRowResidual}}
}

// Validate reports the first invalid setting, naming it.
func (s Settings) Validate() error {
	if !(s.LearningRate > 0) || math.IsInf(s.LearningRate, 0) {
		return fmt.Errorf("fgn: learning rate α must be finite and > 0, got %g", s.LearningRate)
	}
	if !(s.Momentum >= 0 && s.Momentum < 1) {
		return fmt.Errorf("fgn: momentum β must be in [0, 1), got %g", s.Momentum)
	}
	return s.validateSolve()
}

// validateSolve checks the settings a direction uses (all but the learning rate). The
// graph-building functions panic with its error; host entry points return it.
func (s Settings) validateSolve() error {
	if !(s.Damping > 0) || math.IsInf(s.Damping, 0) {
		return fmt.Errorf("fgn: damping λ must be finite and > 0, got %g", s.Damping)
	}
	if err := s.CG.Validate(); err != nil {
		return err
	}
	if s.RowOperator != "" && s.RowOperator != ClosedFormGram && s.RowOperator != MatrixFree && s.RowOperator != CheaperRowOperator {
		return fmt.Errorf("fgn: unknown row operator %q (want %q, %q or %q)", s.RowOperator, CheaperRowOperator,
			ClosedFormGram, MatrixFree)
	}
	if !(s.SaturationFloor >= 0 && s.SaturationFloor < 0.25) {
		return fmt.Errorf("fgn: saturation floor must be in [0, 1/4), got %g", s.SaturationFloor)
	}
	return nil
}

func (s Settings) mustValidateSolve() {
	if err := s.validateSolve(); err != nil {
		exceptions.Panicf("%v", err)
	}
}

func (s Settings) floor(dtype dtypes.DType) float64 {
	if s.SaturationFloor > 0 {
		return s.SaturationFloor
	}
	if dtype == dtypes.Float64 {
		eps := math.Nextafter(1, 2) - 1
		return eps * eps
	}
	eps := float64(math.Nextafter32(1, 2) - 1)
	return eps * eps
}

// Validate reports the first invalid CG setting.
func (s CGSettings) Validate() error {
	switch {
	case s.MaxIterations < 1:
		return fmt.Errorf("fgn: CG iteration cap must be ≥ 1, got %d", s.MaxIterations)
	case !(s.Tolerance >= 0) || math.IsInf(s.Tolerance, 1):
		return fmt.Errorf("fgn: CG tolerance must be finite and ≥ 0, got %g", s.Tolerance)
	case s.StoppingRule != "" && s.StoppingRule != StopParameterResidual && s.StoppingRule != StopWhitenedRowResidual:
		return fmt.Errorf("fgn: unknown CG stopping rule %q (want %q or %q)", s.StoppingRule, StopParameterResidual,
			StopWhitenedRowResidual)
	}
	return nil
}
