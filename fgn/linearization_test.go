package fgn_test

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// linearHead is a closed-form linearisation written outside the package, as a user would: the
// bias-free head z = h W, with J_z V = h V and J_zᵀ m = hᵀ m.
type linearHead struct{ h, w, logits *Node }

func (l *linearHead) Logits() *Node       { return l.logits }
func (l *linearHead) Params() fgn.Vec     { return fgn.Vec{l.w} }
func (l *linearHead) VJP(m *Node) fgn.Vec { return fgn.Vec{Einsum("bd,bc->dc", l.h, m)} }
func (l *linearHead) JVP(v fgn.Vec) *Node { return MatMul(l.h, v[0]) }

// optInHead is linearHead opting into CG's While loop and into trial logits from J_z s
// (fgn.WhileSafe, fgn.LinearInParams): its logits are linear in W.
type optInHead struct{ linearHead }

func (*optInHead) WhileSafe() bool      { return true }
func (*optInHead) LinearInParams() bool { return true }

// TestUserLinearization checks that a Linearization implemented outside the package and recorded
// with RecordLinearization drives FGN and SGN in train.Trainer: the steps agree with those of
// the autodiff linearisation of the same logits (no recording), with constant damping, and with
// Levenberg-Marquardt damping when it opts into linear trial logits (and CG's While loop).
func TestUserLinearization(t *testing.T) {
	be := backend.MustNew()
	h := [][]float64{{1, -0.5, 2}, {0.3, 0.8, -1}, {-1.2, 0.1, 0.4}, {0.5, 0.5, 0.5}, {2, -1, 0}}
	labels := []int32{0, 2, 1, 1, 0}
	w0 := [][]float64{{0.1, -0.2, 0.3}, {0.0, 0.4, -0.1}, {-0.3, 0.2, 0.2}}
	lm := func(c *fgn.GNConfig) *fgn.GNConfig { return c.DampingPolicy(fgn.LevenbergMarquardt()).Damping(0.1) }
	for _, opt := range []struct {
		name  string
		cfg   func() *fgn.GNConfig
		optIn bool
	}{
		{"FGN", fgn.FGN, false},
		{"SGN", fgn.SGN, false},
		{"FGN LM opt-in", func() *fgn.GNConfig { return lm(fgn.FGN().RowOperator(fgn.MatrixFree)) }, true},
		{"SGN LM opt-in", func() *fgn.GNConfig { return lm(fgn.SGN()) }, true},
	} {
		weights := map[bool][]float64{}
		for _, record := range []bool{true, false} {
			store := model.NewStore()
			modelFn := func(scope *model.Scope, x *Node) *Node {
				w := scope.VariableWithValue("W", w0).NodeValue(x.Graph())
				var lin fgn.Linearization = &linearHead{h: x, w: w, logits: MatMul(x, w)}
				if opt.optIn {
					lin = &optInHead{*lin.(*linearHead)}
				}
				if record {
					fgn.RecordLinearization(lin)
				}
				return lin.Logits()
			}
			trainer := train.NewTrainer(be, store, modelFn, fgn.Loss,
				opt.cfg().LearningRate(0.5).DampingPolicy(fgn.ConstantDamping{}).CGMaxIterations(3).Done(), nil, nil)
			for range 3 {
				batch := train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(h)},
					Labels: []*tensors.Tensor{tensors.FromValue(labels)}}
				if _, err := trainer.TrainStep(batch); err != nil {
					t.Fatalf("%s: %+v", opt.name, err)
				}
			}
			weights[record] = tensors.MustCopyFlatData[float64](store.GetVariable("/W").MustValue())
		}
		var diff, norm float64
		for k, v := range weights[false] {
			diff = math.Max(diff, math.Abs(weights[true][k]-v))
			norm = math.Max(norm, math.Abs(v-w0[k/3][k%3]))
		}
		const tol = 1e-12
		if !(diff <= tol*norm) || norm == 0 {
			t.Errorf("%s: recorded vs autodiff weights after 3 steps: error %.3g (tolerance %.0e·%.3g)", opt.name, diff, tol, norm)
		} else {
			t.Logf("%s: recorded vs autodiff weights after 3 steps: error %.3g (tolerance %.0e·%.3g)", opt.name, diff, tol, norm)
		}
	}
}
