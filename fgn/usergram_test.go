package fgn

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/internal/ref"
)

// linearHead is a model this package does not know, with its own closed-form margin Gram: the
// bias-free head z = h W (h: b×d, W: d×C), for which
//
//	J_z V = h V,   J_zᵀ m = hᵀ m,   G_ij = (h_i·h_j)(∇_z s_i·∇_z s_j).
//
// grams counts the MarginGram calls made while building graphs.
type linearHead struct {
	h, w, logits *Node
	grams        *int
}

var _ GramLinearization = linearHead{}

func newLinearHead(h, w *Node, grams *int) linearHead {
	return linearHead{h: h, w: w, logits: MatMul(h, w), grams: grams}
}

func (l linearHead) Logits() *Node   { return l.logits }
func (l linearHead) Params() Vec     { return Vec{l.w} }
func (l linearHead) VJP(m *Node) Vec { return Vec{Einsum("bd,bc->dc", l.h, m)} }
func (l linearHead) JVP(v Vec) *Node { return MatMul(l.h, v[0]) }
func (l linearHead) MarginGram(gradS *Node) *Node {
	*l.grams++
	return Mul(Einsum("id,jd->ij", l.h, l.h), Einsum("ic,jc->ij", gradS, gradS))
}

// TestUserGramLinearization checks that a user's GramLinearization gets FGN's closed-form row
// operator from FGNDirection, from the optimizer's UpdateGraphWithLinearization and from GoMLX's
// train.Trainer (recorded with RecordLinearization), and the matrix-free one with MatrixFree: the
// direction (or the step divided by α) equals the dense float64 solve of (H_FGN + λI) d = −g, and
// MarginGram is called once per graph exactly when the closed form is asked for.
func TestUserGramLinearization(t *testing.T) {
	const alpha, lambda = 0.3, 0.7
	p := newProblem(31, 6, 9, 4, 0, 1) // d·C = 36 > b: the row space is the smaller one
	var grams int
	dnOut := run(t, func(in []*Node) []*Node {
		dn, _ := newDense(newLinearHead(in[0], in[2], &grams), in[1])
		return []*Node{dn.FGN, dn.Grad}
	}, cast(p.h, dtypes.Float64), p.labels, cast(p.w, dtypes.Float64))
	neg := make([]float64, len(dnOut[1]))
	for k, g := range dnOut[1] {
		neg[k] = -g
	}
	want := denseSolve(t, dnOut[0], len(neg), lambda, neg)

	cfg := exactCG
	cfg.Damping, cfg.LearningRate = lambda, alpha
	paths := []struct {
		name string
		step func(t *testing.T, op string) []float64 // d
	}{
		{"FGNDirection", func(t *testing.T, op string) []float64 {
			s := cfg
			s.RowOperator = op
			return run(t, func(in []*Node) []*Node {
				return []*Node{flattenVec(fgnDir(newLinearHead(in[0], in[2], &grams), in[1], nil, s).D)}
			}, cast(p.h, dtypes.Float64), p.labels, cast(p.w, dtypes.Float64))[0]
		}},
		{"UpdateGraphWithLinearization", func(t *testing.T, op string) []float64 {
			store, w := linearHeadStore(p)
			opt := FGN().WithSettings(cfg).DampingPolicy(ConstantDamping{}).RowOperator(op).Done()
			exec, err := model.NewExec(testBackend, store, func(scope *model.Scope, h, labels *Node) *Node {
				scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
				return opt.UpdateGraphWithLinearization(scope, newLinearHead(h, w.NodeValue(h.Graph()), &grams), labels).Loss
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Call(p.h, p.labels); err != nil {
				t.Fatalf("step: %+v", err)
			}
			return stepOf(w, p, alpha)
		}},
		{"train.Trainer", func(t *testing.T, op string) []float64 {
			store, w := linearHeadStore(p)
			logits := func(_ *model.Scope, h *Node) *Node {
				lin := newLinearHead(h, w.NodeValue(h.Graph()), &grams)
				RecordLinearization(lin)
				return lin.Logits()
			}
			trainer := train.NewTrainer(testBackend, store, logits, Loss, FGN().WithSettings(cfg).DampingPolicy(ConstantDamping{}).RowOperator(op).Done(), nil, nil)
			if _, err := trainer.TrainStep(p.batch()); err != nil {
				t.Fatalf("train step: %+v", err)
			}
			return stepOf(w, p, alpha)
		}},
	}
	for _, path := range paths {
		for _, op := range []string{ClosedFormGram, MatrixFree} {
			t.Run(path.name+" "+op, func(t *testing.T) {
				grams = 0
				d := path.step(t, op)
				check(t, "direction vs dense (H_FGN+λI)⁻¹(−g)", ref.RelErr(d, want), 1e-8)
				wantGrams := 0
				if op == ClosedFormGram {
					wantGrams = 1
				}
				if grams != wantGrams {
					t.Errorf("MarginGram called %d times while building the graph, want %d", grams, wantGrams)
				}
			})
		}
	}
}

// linearHeadStore returns a store holding the problem's W (float64) as the one trainable variable.
func linearHeadStore(p *problem) (*model.Store, *model.Variable) {
	store := model.NewStore()
	return store, store.RootScope().In("head").VariableWithValue("W", p.w)
}

// stepOf returns (W − W₀)/α after one step from the problem's W₀.
func stepOf(w *model.Variable, p *problem, alpha float64) []float64 {
	d := flat64(w.MustValue())
	for i, row := range p.w {
		for j, w0 := range row {
			k := i*len(row) + j
			d[k] = (d[k] - w0) / alpha
		}
	}
	return d
}
