package fgn

import (
	"math"
	"testing"

	"github.com/fgn-paper/fgn/internal/ref"
)

// TestScaledDampingMatchesDense checks one step of FGN and SGN with Settings.ScaledDamping against
// the dense damped solve d = −(H + D + λS)⁻¹(g + ∇R) of explicitAffine, the independent float64
// reference, for the metric S that the optimizer's state sets (W's entries damped by λs_W, the
// bias's by λs_b), s_k = (max(ρ_k/ρ̄, 10⁻⁴))^{1/2} computed on the host from the preset moving
// averages: FGN's closed-form Gram with per-tensor weights, its matrix-free products, autodiff,
// and SGN, to 1e-8 relative, without a regulariser and with an L2 term on W and the bias, on a
// random batch and on one whose every other row is saturated (FGN's gradient start). FGN's step
// length is checked against −(g + ∇R)ᵀd/dᵀ(H_GGN + D + λS)d and the moving averages after the
// step against β₂v_k + (1 − β₂)·mean((g + ∇R)_k²). The first step (no average yet) takes S = I.
func TestScaledDampingMatchesDense(t *testing.T) {
	const lambda = 0.3
	assemblies := dampedStepAssemblies(func(c *GNConfig) *GNConfig { return c.ScaledDamping(true).Damping(lambda) })
	l2 := regCases[1] // L2 on W and the bias
	states := []struct {
		name       string
		meanSquare [2]float64 // v_W, v_bias
		steps      float64
	}{
		{"first step", [2]float64{0, 0}, 0},
		{"bias gradients larger", [2]float64{1e-2, 4}, 3},
		{"W gradients larger", [2]float64{2.5, 1e-3}, 7},
	}
	for _, st := range states {
		for _, rc := range []regCase{noRegulariser, l2} {
			for _, pc := range denseStepProblems() {
				p := pc.p
				e := newExplicitAffine(p)
				gradR, hess := rc.grad(p), rc.hessian(p)
				nW := p.d * p.c
				// S on the host.
				s := [2]float64{1, 1}
				if st.steps > 0 {
					corr := 1 - math.Pow(metricDecay, st.steps)
					rho := [2]float64{math.Sqrt(st.meanSquare[0] / corr), math.Sqrt(st.meanSquare[1] / corr)}
					mean := (float64(nW)*rho[0] + float64(p.c)*rho[1]) / float64(nW+p.c)
					for k := range s {
						s[k] = math.Sqrt(math.Max(rho[k]/mean, metricFloor))
					}
				}
				entryScale := func(k int) float64 {
					if k < nW {
						return s[0]
					}
					return s[1]
				}
				for _, as := range assemblies {
					t.Run(st.name+"/"+rc.name+"/"+pc.name+"/"+as.name, func(t *testing.T) {
						curvature := e.fgn
						if as.sgn {
							curvature = e.ggn
						}
						want := denseDampedStep(t, curvature, func(k int) float64 { return hess[k] + lambda*entryScale(k) },
							e.grad, gradR)
						m := newOptModel(p, false, false)
						scopeName := as.opt.scopeName
						state := m.store.Scope("/" + scopeName + "/classifier")
						state.VariableWithValue("W_mean_square", st.meanSquare[0]).SetTrainable(false)
						state.VariableWithValue("bias_mean_square", st.meanSquare[1]).SetTrainable(false)
						m.store.Scope("/"+scopeName).VariableWithValue("scaled_damping_steps", st.steps).SetTrainable(false)
						got, _, _, tau := m.regularisedStep(t, as.opt.Done(), p, rc, as.lin)
						check(t, "direction vs dense −(H + D + λS)⁻¹(g + ∇R)", ref.RelErr(got, want), 1e-8)
						if !as.sgn {
							checkGGNStepLength(t, tau, got, e, gradR, func(k int) float64 { return hess[k] + lambda*entryScale(k) })
						}
						// The moving averages after the step.
						var sq [2]float64
						for k := range e.n {
							gk := e.grad.AtVec(k) + gradR[k]
							if k < nW {
								sq[0] += gk * gk / float64(nW)
							} else {
								sq[1] += gk * gk / float64(p.c)
							}
						}
						for k, name := range []string{"W_mean_square", "bias_mean_square"} {
							v := m.store.GetVariable("/" + scopeName + "/classifier/" + name)
							wantV := metricDecay*st.meanSquare[k] + (1-metricDecay)*sq[k]
							check(t, name+" after the step vs β₂v + (1 − β₂)·mean(g²)",
								math.Abs(flat64(v.MustValue())[0]-wantV)/wantV, 1e-10)
						}
						if n := flat64(m.store.GetVariable("/" + scopeName + "/scaled_damping_steps").MustValue())[0]; n != st.steps+1 {
							t.Errorf("scaled_damping_steps = %g after a step from %g", n, st.steps)
						}
					})
				}
			}
		}
	}
}

// TestScaledDampingPerEntryMatchesDense checks one step of FGN and SGN with
// Settings.ScaledDampingPerEntry against the dense damped solve d = −(H + D + λS)⁻¹(g + ∇R) of
// explicitAffine, the independent float64 reference, for the per-entry metric that the
// optimizer's state sets, s_j = (max(ρ_j/ρ̄, 10⁻⁴))^{1/2} with ρ_j = √v̂_j of each entry's preset
// moving average and ρ̄ their mean, computed on the host: FGN asked for the closed-form Gram (which
// a per-entry metric turns into matrix-free products), matrix-free, autodiff, and SGN, to 1e-8
// relative, without a regulariser and with an L2 term on W and the bias, on a random batch and on
// one whose every other row is saturated. FGN's step length is checked against
// −(g + ∇R)ᵀd/dᵀ(H_GGN + D + λS)d, and the moving averages after the step against
// β₂v_j + (1 − β₂)(g + ∇R)_j² per entry.
func TestScaledDampingPerEntryMatchesDense(t *testing.T) {
	const lambda, steps = 0.3, 5.0
	assemblies := dampedStepAssemblies(func(c *GNConfig) *GNConfig {
		return c.ScaledDamping(true).ScaledDampingPerEntry(true).Damping(lambda)
	})
	for _, rc := range []regCase{noRegulariser, regCases[1]} {
		for _, pc := range denseStepProblems() {
			p := pc.p
			e := newExplicitAffine(p)
			gradR, hess := rc.grad(p), rc.hessian(p)
			nW := p.d * p.c
			// Preset averages over four decades, W's entries row-major, then the bias's; S on the host.
			v := make([]float64, e.n)
			for j := range v {
				v[j] = math.Pow(10, -3+4*float64((j*7)%e.n)/float64(e.n))
			}
			corr := 1 - math.Pow(metricDecay, steps)
			var mean float64
			for j := range v {
				mean += math.Sqrt(v[j]/corr) / float64(e.n)
			}
			s := make([]float64, e.n)
			for j := range s {
				s[j] = math.Sqrt(math.Max(math.Sqrt(v[j]/corr)/mean, metricFloor))
			}
			vW := make([][]float64, p.d)
			for k := range vW {
				vW[k] = v[k*p.c : (k+1)*p.c]
			}
			for _, as := range assemblies {
				t.Run(rc.name+"/"+pc.name+"/"+as.name, func(t *testing.T) {
					curvature := e.fgn
					if as.sgn {
						curvature = e.ggn
					}
					want := denseDampedStep(t, curvature, func(k int) float64 { return hess[k] + lambda*s[k] }, e.grad, gradR)
					m := newOptModel(p, false, false)
					scopeName := as.opt.scopeName
					state := m.store.Scope("/" + scopeName + "/classifier")
					state.VariableWithValue("W_entry_mean_square", vW).SetTrainable(false)
					state.VariableWithValue("bias_entry_mean_square", v[nW:]).SetTrainable(false)
					m.store.Scope("/"+scopeName).VariableWithValue("scaled_damping_steps", steps).SetTrainable(false)
					got, _, _, tau := m.regularisedStep(t, as.opt.Done(), p, rc, as.lin)
					check(t, "direction vs dense −(H + D + λS)⁻¹(g + ∇R)", ref.RelErr(got, want), 1e-8)
					if !as.sgn {
						checkGGNStepLength(t, tau, got, e, gradR, func(k int) float64 { return hess[k] + lambda*s[k] })
					}
					after := append(flat64(m.store.GetVariable("/"+scopeName+"/classifier/W_entry_mean_square").MustValue()),
						flat64(m.store.GetVariable("/"+scopeName+"/classifier/bias_entry_mean_square").MustValue())...)
					wantV := make([]float64, e.n)
					for j := range wantV {
						gj := e.grad.AtVec(j) + gradR[j]
						wantV[j] = metricDecay*v[j] + (1-metricDecay)*gj*gj
					}
					check(t, "per-entry averages after the step vs β₂v + (1 − β₂)g²", ref.RelErr(after, wantV), 1e-10)
				})
			}
		}
	}
}

// checkGGNStepLength checks FGN's step length τ along its direction d against the dense
// −(g + ∇R)ᵀd/dᵀ(H_GGN + diag(damping))d, clipped at 1, to 1e-10.
func checkGGNStepLength(t *testing.T, tau float64, d []float64, e *explicitAffine, gradR []float64, damping func(k int) float64) {
	t.Helper()
	var gd, dhd float64
	for k := range d {
		gd += d[k] * (e.grad.AtVec(k) + gradR[k])
		dhd += d[k] * d[k] * damping(k)
		for l := range d {
			dhd += d[k] * e.ggn.At(k, l) * d[l]
		}
	}
	check(t, "step length τ vs −(g + ∇R)ᵀd/dᵀ(H_GGN + D + λS)d", math.Abs(tau-math.Min(-gd/dhd, 1)), 1e-10)
}
