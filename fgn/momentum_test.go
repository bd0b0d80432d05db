package fgn

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/internal/ref"
)

// TestMomentumAveragesSteps checks Settings.Momentum against the average formed on the host from
// each step's direction d_t and length τ_t: over three steps of FGN (at the GGN's step length)
// and SGN on an affine head, with a constant λ and with Levenberg-Marquardt's, the parameters move
// by s_t = α m_t/(1 − βᵗ), m_t = β m_{t−1} + (1 − β) τ_t d_t, and the state holds m_t and t, to
// 1e-12 relative. With Levenberg-Marquardt the predicted decrease of each step is the GGN model's
// −(gᵀs_t + ½ s_tᵀH_GGN s_t) at the parameters it starts from, from the independent dense reference
// (explicitAffine), to 1e-10; then a step at α = 10⁴, which raises the batch loss, is rejected,
// leaves the parameters, and restarts the average (m = 0, t = 0).
func TestMomentumAveragesSteps(t *testing.T) {
	const (
		alpha = 0.7
		beta  = 0.9
	)
	p := newProblem(31, 12, 5, 4, 0, 1)
	for _, tc := range []struct {
		name  string
		opt   func() *GNConfig
		scope string
	}{
		{"FGN constant λ", func() *GNConfig { return FGN().DampingPolicy(ConstantDamping{}).Damping(0.5) }, "FGNOptimizer"},
		{"SGN constant λ", func() *GNConfig { return SGN().DampingPolicy(ConstantDamping{}).Damping(0.5) }, "SGNOptimizer"},
		{"FGN Levenberg-Marquardt", FGN, "FGNOptimizer"},
		{"SGN Levenberg-Marquardt", SGN, "SGNOptimizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, false, false)
			stepper := func(opt Optimizer) *model.Exec {
				return model.MustNewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) []*Node {
					scope.Store().SetTraining(h.Graph(), true)
					dir := opt.UpdateGraphWithLinearization(scope, m.lin(h), labels)
					tau := dir.StepLength
					if tau == nil {
						tau = OnesLike(dir.Loss)
					}
					predicted := ScalarZero(h.Graph(), dir.Loss.DType())
					if dir.Damping.Predicted != nil {
						predicted = dir.Damping.Predicted
					}
					return []*Node{flattenVec(dir.D), tau, predicted, dir.Damping.Accepted}
				})
			}
			exec := stepper(tc.opt().LearningRate(alpha).Momentum(beta).ScaledDamping(false).Done())
			state := func() (mt []float64, steps float64) {
				for _, v := range m.vars {
					mt = append(mt, flat64(m.store.GetVariable("/"+tc.scope+"/classifier/"+v.Name()+"_momentum").MustValue())...)
				}
				return mt, flat64(m.store.GetVariable("/" + tc.scope + "/momentum_steps").MustValue())[0]
			}
			adaptive := tc.opt().damping.Adaptive()
			avg := &hostAverage{alpha: alpha, beta: beta}
			for step := 1; step <= 3; step++ {
				before := m.flatParams()
				out := exec.MustCall(p.h, p.labels)
				d, tau, predicted := flat64(out[0]), flat64(out[1])[0], flat64(out[2])[0]
				if !tensors.ToScalar[bool](out[3]) {
					t.Fatalf("step %d was not taken", step)
				}
				want := avg.add(d, tau)
				check(t, "parameters' change vs α m_t/(1 − βᵗ)", ref.RelErr(sub(m.flatParams(), before), want), 1e-12)
				mt, steps := state()
				check(t, "state m_t", ref.RelErr(mt, avg.m), 1e-12)
				if steps != float64(step) {
					t.Errorf("momentum_steps = %g after %d steps", steps, step)
				}
				if adaptive {
					check(t, "predicted decrease vs the dense GGN model of s_t",
						math.Abs(predicted-ggnModelDecrease(p, before, want, nil))/math.Abs(predicted), 1e-10)
				}
			}
			if !adaptive {
				return
			}
			before := m.flatParams()
			out := stepper(tc.opt().LearningRate(1e4).Momentum(beta).ScaledDamping(false).Done()).MustCall(p.h, p.labels)
			if tensors.ToScalar[bool](out[3]) {
				t.Fatalf("a step at α = 1e4 was accepted: the test would not see a rejection")
			}
			if ref.RelErr(m.flatParams(), before) != 0 {
				t.Errorf("a rejected step changed the parameters")
			}
			if mt, steps := state(); ref.MaxAbs(mt) != 0 || steps != 0 {
				t.Errorf("after a rejected step the average is not restarted: max |m| = %g, t = %g", ref.MaxAbs(mt), steps)
			}
		})
	}
}

// TestMomentumRegularised checks Settings.Momentum on a regularised loss (GoMLX's L2 on W and
// the bias, through the Trainer's total loss): over three Levenberg-Marquardt steps of FGN and
// SGN the parameters move by α m_t/(1 − βᵗ) of the reported directions and lengths, to 1e-12,
// and the predicted decrease is the dense model of the regularised loss at the step's start,
// −((g + ∇R)ᵀs + ½ sᵀ(H_GGN + D)s), to 1e-10.
func TestMomentumRegularised(t *testing.T) {
	const (
		alpha = 0.7
		beta  = 0.9
	)
	p := newProblem(31, 12, 5, 4, 0, 1)
	rc := regCases[1] // L2 on W and the bias
	for _, tc := range []struct {
		name string
		opt  *GNConfig
	}{{"FGN", FGN()}, {"SGN", SGN()}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, false, false)
			opt := tc.opt.LearningRate(alpha).Momentum(beta).Done()
			avg := &hostAverage{alpha: alpha, beta: beta}
			for range 3 {
				before := m.flatParams()
				d, predicted, _, tau := m.regularisedStep(t, opt, p, rc, func(a *AffineHead) Linearization { return a })
				want := avg.add(d, tau)
				check(t, "parameters' change vs α m_t/(1 − βᵗ)", ref.RelErr(sub(m.flatParams(), before), want), 1e-12)
				check(t, "predicted decrease vs the dense regularised GGN model of s_t",
					math.Abs(predicted-ggnModelDecrease(p, before, want, &rc))/math.Abs(predicted), 1e-10)
			}
		})
	}
}

// hostAverage is Settings.Momentum's average of the steps formed on the host, the tests'
// reference: m_t and t.
type hostAverage struct {
	alpha, beta float64
	m           []float64
	t           int
}

// add folds in a step's direction d and length tau, m_t = β m_{t−1} + (1 − β) τ d, and returns
// the step s_t = α m_t/(1 − βᵗ).
func (h *hostAverage) add(d []float64, tau float64) []float64 {
	if h.m == nil {
		h.m = make([]float64, len(d))
	}
	h.t++
	corr := 1 - math.Pow(h.beta, float64(h.t))
	s := make([]float64, len(d))
	for k := range d {
		h.m[k] = h.beta*h.m[k] + (1-h.beta)*tau*d[k]
		s[k] = h.alpha * h.m[k] / corr
	}
	return s
}

// ggnModelDecrease returns −((g + ∇R)ᵀs + ½ sᵀ(H_GGN + D)s) for the affine head of p at the
// parameters w (W row-major, then the bias), from the dense reference explicitAffine, with the
// regulariser rc's gradient ∇R and Hessian diagonal D at w (rc nil for none).
func ggnModelDecrease(p *problem, w, s []float64, rc *regCase) float64 {
	at := *p
	at.w = make([][]float64, p.d)
	for k := range p.d {
		at.w[k] = w[k*p.c : (k+1)*p.c]
	}
	at.bias = w[p.d*p.c:]
	e := newExplicitAffine(&at)
	sv := mat.NewVecDense(len(s), s)
	decrease := -(mat.Dot(e.grad, sv) + 0.5*mat.Inner(sv, e.ggn, sv))
	if rc != nil {
		gradR, hess := rc.grad(&at), rc.hessian(&at)
		for k := range s {
			decrease -= gradR[k]*s[k] + 0.5*hess[k]*s[k]*s[k]
		}
	}
	return decrease
}
