package fgn

import (
	"math"
	"runtime"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/internal/ref"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// softmaxRef returns softmax probabilities of a row, computed in float64 on the host.
func softmaxRef(z []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, v)
	}
	p := make([]float64, len(z))
	sum := 0.0
	for i, v := range z {
		p[i] = math.Exp(v - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// TestMarginLossAndGradient checks eq. (2.4), loss = softmax cross-entropy, and eqs. (2.11)
// and (3.8), gradient = J_zᵀ(p−y)/b, against host float64 references for an affine head.
func TestMarginLossAndGradient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dtype dtypes.DType
		scale float64
		tol   float64
	}{
		{"float64", dtypes.Float64, 1, 1e-12},
		{"float64-large-logits", dtypes.Float64, 30, 1e-12},
		{"float32", dtypes.Float32, 1, 2e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(1, 6, 4, 5, 3, tc.scale)
			out := run(t, func(in []*Node) []*Node {
				lin := affineLin(in)
				m := gn.NewMargin(lin.Logits(), in[1])
				loss, grad := ReduceAllMean(m.Loss), m.Gradient(lin)
				return append([]*Node{lin.Logits(), loss}, grad...)
			}, p.affineInputs(tc.dtype)...)
			logits, loss, gradW, gradB := out[0], out[1][0], out[2], out[3]
			wantLoss := 0.0
			wantW := make([]float64, p.d*p.c)
			wantB := make([]float64, p.c)
			for i := range p.b {
				probs := softmaxRef(logits[i*p.c : (i+1)*p.c])
				y := int(p.labels[i])
				wantLoss -= math.Log(probs[y]) / float64(p.b)
				for c := range p.c {
					r := probs[c]
					if c == y {
						r--
					}
					wantB[c] += r / float64(p.b)
					for k := range p.d {
						wantW[k*p.c+c] += p.h[i][k] * r / float64(p.b)
					}
				}
			}
			check(t, "loss vs -log softmax", math.Abs(loss-wantLoss)/wantLoss, tc.tol)
			check(t, "gradient W vs J_zᵀ(p−y)/b", ref.RelErr(gradW, wantW), tc.tol)
			check(t, "gradient b vs J_zᵀ(p−y)/b", ref.RelErr(gradB, wantB), tc.tol)
		})
	}
}

// TestMarginQuantities checks p_★, p_†, q, ρ, ξ and ∇_z s against their definitions (eqs.
// 2.2-2.7, 3.6) and the identity p_†∇_z s = p − y (eq. 2.8).
func TestMarginQuantities(t *testing.T) {
	p := newProblem(2, 5, 3, 6, 3, 2)
	out := run(t, func(in []*Node) []*Node {
		lin := affineLin(in)
		m := gn.NewMargin(lin.Logits(), in[1])
		return []*Node{lin.Logits(), m.S, m.PStar, m.PDagger, m.Q, m.Rho, m.Xi, m.GradS}
	}, p.affineInputs(dtypes.Float64)...)
	logits, s, pStar, pDagger, q, rho, xi, gradS := out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]
	var errs [6]float64
	for i := range p.b {
		z := logits[i*p.c : (i+1)*p.c]
		probs := softmaxRef(z)
		y := int(p.labels[i])
		lse := 0.0
		for c := range p.c {
			if c != y {
				lse += math.Exp(z[c])
			}
		}
		errs[0] = math.Max(errs[0], math.Abs(s[i]-(math.Log(lse)-z[y])))
		errs[1] = math.Max(errs[1], math.Abs(pStar[i]-probs[y]))
		errs[2] = math.Max(errs[2], math.Abs(pDagger[i]-(1-probs[y])))
		errs[3] = math.Max(errs[3], math.Abs(q[i]-probs[y]*(1-probs[y])))
		sumSq := 0.0
		if rho[i*p.c+y] != 0 {
			t.Errorf("example %d: ρ at the true class = %g, want exactly 0 (ρ has no true-class entry)", i, rho[i*p.c+y])
		}
		for c := range p.c {
			want := 0.0
			if c != y {
				want = probs[c] / (1 - probs[y])
			}
			sumSq += want * want
			errs[4] = math.Max(errs[4], math.Abs(rho[i*p.c+c]-want))
			oneHot := 0.0
			if c == y {
				oneHot = 1
			}
			errs[5] = math.Max(errs[5], math.Abs(pDagger[i]*gradS[i*p.c+c]-(probs[c]-oneHot)))
		}
		errs[4] = math.Max(errs[4], math.Abs(xi[i]-(1-sumSq)))
		if xi[i] < -1e-15 || xi[i] > 1-1/float64(p.c-1)+1e-15 {
			t.Errorf("ξ=%g outside [0, 1-1/(C-1)]", xi[i])
		}
	}
	for k, name := range []string{"s", "p★", "p†", "q", "ρ and ξ", "p†∇s = p−y"} {
		check(t, name, errs[k], 1e-13)
	}
}

// TestMarginSaturatedFloat32 checks that the margin quantities stay finite in float32 for
// margins up to |s| = 1e4 and agree with a float64 reference: s and the loss to a relative
// 1e-6, the probabilities p_★, p_†, q, ρ (in ∇s) and ξ, all in [−1, 1], to an absolute 1e-6. q of
// a saturated example is e^{−|s|} ≈ 0 in both; a backend's Exp may return a tiny number
// instead of underflowing to 0, which the absolute tolerance allows and the maths does too.
func TestMarginSaturatedFloat32(t *testing.T) {
	logits := [][]float64{{1e4, 0, -1}, {-1e4, 0, 1}, {0, 5e3, -5e3}, {0, 0, 0}}
	labels := []int32{0, 0, 1, 2}
	out := run(t, func(in []*Node) []*Node {
		m := gn.NewMargin(in[0], in[1])
		return []*Node{m.S, m.Loss, m.PStar, m.PDagger, m.Q, m.Xi, m.GradS}
	}, cast(logits, dtypes.Float32), labels)
	for k, o := range out {
		for _, v := range o {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("output %d has a non-finite value: %v", k, o)
			}
		}
	}
	s, loss, pStar, pDagger, q, xi, gradS := out[0], out[1], out[2], out[3], out[4], out[5], out[6]
	var relS, relLoss, absP float64
	for i, z := range logits {
		y, c := int(labels[i]), len(z)
		m := math.Inf(-1) // competitor maximum, then ρ and s in float64
		for j, v := range z {
			if j != y {
				m = math.Max(m, v)
			}
		}
		rho := make([]float64, c)
		sum := 0.0
		for j, v := range z {
			if j != y {
				rho[j] = math.Exp(v - m)
				sum += rho[j]
			}
		}
		wantS := m + math.Log(sum) - z[y]
		wantPStar, wantPDagger := 1/(1+math.Exp(wantS)), 1/(1+math.Exp(-wantS))
		wantLoss := math.Max(wantS, 0) + math.Log1p(math.Exp(-math.Abs(wantS)))
		wantXi := 1.0
		for j := range rho {
			rho[j] /= sum
			wantXi -= rho[j] * rho[j]
		}
		rho[y] = -1
		relS = math.Max(relS, math.Abs(s[i]-wantS)/math.Max(1, math.Abs(wantS)))
		relLoss = math.Max(relLoss, math.Abs(loss[i]-wantLoss)/math.Max(1, wantLoss))
		for _, e := range []float64{pStar[i] - wantPStar, pDagger[i] - wantPDagger, q[i] - wantPStar*wantPDagger, xi[i] - wantXi} {
			absP = math.Max(absP, math.Abs(e))
		}
		for j := range c {
			absP = math.Max(absP, math.Abs(gradS[i*c+j]-rho[j]))
		}
		if q[i] < 0 {
			t.Errorf("q = %g < 0 for example %d", q[i], i)
		}
	}
	check(t, "s vs float64 (relative)", relS, 1e-6)
	check(t, "loss vs float64 (relative)", relLoss, 1e-6)
	check(t, "p★, p†, q, ξ, ∇s vs float64 (absolute)", absP, 1e-6)
}

// TestMarginUnderflow checks that the competitor weights ρ are exactly 0 at the true class and
// at competitors whose exponential underflows to 0 in the dtype (exp(−800), exp(−2000)), so that ρ
// is exactly one-hot and ξ = 1 − ‖ρ‖² exactly 0 at saturation, in both builds (see compat.go:
// compatSIMDExpUnderflow). The reference is IEEE arithmetic: e^{−800} rounds to 0 in float64 and
// float32 alike.
func TestMarginUnderflow(t *testing.T) {
	logits := [][]float64{{5, 0, -800, -2000}, {0, -800, 3, -2000}, {-800, -2000, 1, 1}}
	labels := []int32{0, 2, 0}
	wantRho := [][]float64{{0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 0.5, 0.5}}
	wantXi := []float64{0, 0, 0.5}
	for _, dtype := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
		t.Run(dtype.String(), func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				m := gn.NewMargin(in[0], in[1])
				return []*Node{m.Rho, m.Xi}
			}, cast(logits, dtype), labels)
			rho, xi := out[0], out[1]
			for i := range logits {
				for j, want := range wantRho[i] {
					if got := rho[i*len(wantRho[i])+j]; got != want {
						t.Errorf("example %d: ρ_%d = %g, want exactly %g (tolerance 0)", i, j, got, want)
					}
				}
				if xi[i] != wantXi[i] {
					t.Errorf("example %d: ξ = %g, want exactly %g (tolerance 0)", i, xi[i], wantXi[i])
				}
			}
		})
	}
}

// TestGradientCostRegression bounds the allocation of one gradient of the affine head
// at b=512, d=2048, C=256. GoMLX v0.26 built a b×d×C tensor for this VJP (2 GB in float32, 100×
// slower); v0.28 contracts over b directly. The bound leaves a wide margin over the few MiB of the
// real working set.
func TestGradientCostRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	const b, d, c = 512, 2048, 256
	h := tensors.FromShape(shapesF32(b, d))
	w := tensors.FromShape(shapesF32(d, c))
	bias := tensors.FromShape(shapesF32(c))
	labels := tensors.FromValue(make([]int32, b))
	exec := MustNewExec(testBackend, func(h, labels, w, bias *Node) []*Node {
		head := NewAffineHead(h, w, bias)
		grad := gn.NewMargin(head.Logits(), labels).Gradient(head)
		return grad
	})
	exec.MustCall(h, labels, w, bias) // compile
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	exec.MustCall(h, labels, w, bias)
	runtime.ReadMemStats(&after)
	allocated := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	t.Logf("one gradient: %.1f MiB allocated", allocated)
	// A b×d×C float32 intermediate alone is 1 GiB; the real working set is a few MiB.
	if allocated > 256 {
		t.Errorf("one gradient allocated %.0f MiB, want < 256 MiB", allocated)
	}
}
