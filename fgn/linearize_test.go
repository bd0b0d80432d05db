package fgn

import (
	"math"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/internal/layerzoo"
	"github.com/fgn-paper/fgn/internal/ref"
)

// TestLinearizeZooStep checks, on every layer of the zoo, that the autodiff products may run in
// CG's While loop (WhileSafe) and that an FGN step with CG run to convergence there (matrix-free,
// autodiff) moves the parameters by α·d, d = −(H_FGN + λI)⁻¹g solved
// densely from the logit Jacobian J_z built column by column by central differences, the
// margin quantities of eqs. 2.1-2.7 computed on the host, g = (1/b) Σ_i p_†,i J_iᵀ and
// H_FGN = (1/b) Σ_i q_i J_iᵀJ_i with J_i = ∇_z s_iᵀ J_z,i (eqs. 2.9, 3.8).
func TestLinearizeZooStep(t *testing.T) {
	const alpha, lambda = 0.5, 0.3
	for i, tc := range layerzoo.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Name == "dropout (inference)" {
				t.Skip("dropout is random in the step's training graph; TestLinearizeZoo covers it")
			}
			m := layerzoo.New(t, testBackend, tc, uint64(200+i))
			m.Training = true // BatchNorm then normalises by the batch's statistics, in the reference too
			w := m.Params(t)
			d, b := len(w), tc.Input[0]
			z := m.Logits(t)
			jz := make([][]float64, d) // jz[k] = ∂z/∂w_k (b·C)
			for k := range d {
				e := make([]float64, d)
				e[k] = 1
				jz[k] = m.FiniteDifference(t, e, 1e-5)
			}
			grad := make([]float64, d)
			hess := make([]float64, d*d)
			for i := range b {
				zi := z[i*layerzoo.Classes : (i+1)*layerzoo.Classes]
				y := int(m.Labels[i])
				mx := slices.Max(zi)
				var sum float64
				p := make([]float64, layerzoo.Classes)
				for c := range p {
					p[c] = math.Exp(zi[c] - mx)
					sum += p[c]
				}
				for c := range p {
					p[c] /= sum
				}
				pDagger := 1 - p[y]
				a := make([]float64, d) // J_iᵀ = J_z,iᵀ ∇_z s_i
				for k := range d {
					for c := range layerzoo.Classes {
						gs := p[c] / pDagger
						if c == y {
							gs = -1
						}
						a[k] += gs * jz[k][i*layerzoo.Classes+c]
					}
				}
				q := p[y] * pDagger
				for k := range d {
					grad[k] += pDagger * a[k] / float64(b)
					for l := range d {
						hess[k*d+l] += q * a[k] * a[l] / float64(b)
					}
				}
			}
			neg := make([]float64, d)
			for k := range neg {
				neg[k] = -grad[k]
			}
			want := denseSolve(t, hess, d, lambda, neg)

			opt := FGN().LearningRate(alpha).Damping(lambda).DampingPolicy(ConstantDamping{}).CGMaxIterations(3 * b).CGTolerance(1e-14).CGStopAtNoise(false).
				GGNStepLength(false).Done()
			var inLoop bool
			exec := model.MustNewExec(testBackend, m.Store, func(scope *model.Scope, x, labels *Node) *Node {
				scope.Store().SetTraining(x.Graph(), true)
				params := make(Vec, len(m.Vars))
				for k, p := range m.Vars {
					params[k] = p.NodeValue(x.Graph())
				}
				lin := Linearize(tc.Build(scope, x), params)
				inLoop = inWhileLoop(lin)
				return opt.UpdateGraphWithLinearization(scope, lin, labels).Loss
			})
			if _, err := exec.Call(m.X, m.Labels); err != nil {
				t.Fatalf("step: %+v", err)
			}
			if !inLoop {
				t.Errorf("the products are not WhileSafe: CG was unrolled instead of running in a While loop")
			}
			moved := sub(m.Params(t), w)
			for k := range moved {
				moved[k] /= alpha
			}
			check(t, "(w⁺−w)/α vs dense −(H_FGN+λI)⁻¹g (relative)", ref.RelErr(moved, want), 1e-6)
		})
	}
}
