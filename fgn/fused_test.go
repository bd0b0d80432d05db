package fgn

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// TestLinearizeFusedDense checks Linearize on the MLP built from nn.Dense, the op layers.Dense
// uses: J_z v agrees with that of the same MLP built from MatMul and Add (mlpLogits) with fusion
// disabled, and with fusion enabled either agrees too or, on a backend whose fused Dense VJP has
// no gradient, fails with an error that names the fix.
func TestLinearizeFusedDense(t *testing.T) {
	p := newProblem(11, 6, 5, 4, 7, 0.5)
	v := newProblem(12, 6, 5, 4, 7, 1)
	denseLogits := func(h *Node, w Vec) *Node {
		hidden := Tanh(nn.Dense(h, w[0], w[1], compute.DenseLayoutInputOutputs))
		return nn.Dense(hidden, w[2], w[3], compute.DenseLayoutInputOutputs)
	}
	jvp := func(logits func(*Node, Vec) *Node) func(in []*Node) []*Node {
		return func(in []*Node) []*Node {
			w := Vec(in[2:6])
			return []*Node{Linearize(logits(in[0], w), w).JVP(Vec(in[6:10]))}
		}
	}
	for _, dtype := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
		tol := map[dtypes.DType]float64{dtypes.Float64: 1e-12, dtypes.Float32: 1e-5}[dtype]
		inputs := append(p.mlpInputs(dtype), cast(v.w1, dtype), cast(v.b1, dtype), cast(v.w2, dtype), cast(v.b2, dtype))
		want := run(t, jvp(mlpLogits), inputs...)[0]
		for _, fusion := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s=%t", dtype, FusionEnv, fusion), func(t *testing.T) {
				t.Setenv(FusionEnv, strconv.FormatBool(fusion))
				got, err := graphrun.Run(testBackend, jvp(denseLogits), inputs...)
				if err != nil {
					fusedVJP := testBackend.Capabilities().Operations[compute.OpTypeFusedDenseVJP]
					if !fusion || !fusedVJP {
						t.Fatalf("J_z v of the nn.Dense MLP failed without a fused Dense VJP: %v", err)
					}
					if !strings.Contains(err.Error(), "fgn.Linearize") || !strings.Contains(err.Error(), "GOMLX_FUSION=false") {
						t.Fatalf("the fused Dense failure does not name the fix: %v", err)
					}
					t.Logf("fused Dense (backend %s) fails as documented: %v", testBackend.Name(), err)
					return
				}
				check(t, "J_z v of the nn.Dense MLP against the MatMul/Add MLP (relative)", ref.RelErr(got[0], want), tol)
			})
		}
	}
}
