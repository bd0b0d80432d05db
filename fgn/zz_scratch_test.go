package fgn

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/layers/fnn"
	lnorm "github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/internal/ref"
)

func TestScratchTransformer(t *testing.T) {
	embed := func(scope *model.Scope, ids *Node) (*Node, *Node) {
		mask := NotEqual(ids, ZerosLike(ids))
		e := layers.Embedding(scope.In("characters"), ids, dtypes.Float64, 7, 4)
		return Where(BroadcastToShape(mask, e.Shape()), e, ZerosLike(e)), mask
	}
	cases := []zooCase{
		{"embed+attention(masked)+mean", []int{6, 5}, 7, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
			e, mask := embed(scope, x)
			h := attention.MultiHeadAttention(scope.In("attention"), e, e, e, 2, 3).WithKeyMask(mask).WithQueryMask(mask).WithOutputDim(4).Done()
			return head(scope, ReduceMean(h, 1))
		}},
		{"embed+attention(keymask)+mean", []int{6, 5}, 7, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
			e, mask := embed(scope, x)
			h := attention.MultiHeadAttention(scope.In("attention"), e, e, e, 2, 3).WithKeyMask(mask).WithOutputDim(4).Done()
			return head(scope, ReduceMean(h, 1))
		}},
		{"embed+attention(nomask)+mean", []int{6, 5}, 7, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
			e, _ := embed(scope, x)
			h := attention.MultiHeadAttention(scope.In("attention"), e, e, e, 2, 3).WithOutputDim(4).Done()
			return head(scope, ReduceMean(h, 1))
		}},
		{"embed+pos+attention(masked)+LN+max", []int{6, 5}, 7, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
			e, mask := embed(scope, x)
			pos := scope.VariableWithShape("positional", shapes.Make(e.DType(), 1, 5, 4)).NodeValue(x.Graph())
			h := Add(e, pos)
			h = attention.MultiHeadAttention(scope.In("attention"), h, h, h, 2, 3).WithKeyMask(mask).WithQueryMask(mask).WithOutputDim(4).Done()
			h = lnorm.LayerNorm(scope.In("norm1"), h, -1).Done()
			return head(scope, ReduceMax(Add(e, h), 1))
		}},
	}
	mk := func(name string, pos, qmask, ln, max bool) zooCase {
		return zooCase{name, []int{6, 5}, 7, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
			e, mask := embed(scope, x)
			h := e
			if pos {
				p := scope.VariableWithShape("positional", shapes.Make(e.DType(), 1, 5, 4)).NodeValue(x.Graph())
				h = Add(e, p)
			}
			b := attention.MultiHeadAttention(scope.In("attention"), h, h, h, 2, 3).WithKeyMask(mask)
			if qmask {
				b = b.WithQueryMask(mask)
			}
			h = b.WithOutputDim(4).Done()
			if ln {
				h = lnorm.LayerNorm(scope.In("norm1"), h, -1).Done()
			}
			if max {
				return head(scope, ReduceMax(Add(e, h), 1))
			}
			return head(scope, ReduceMean(Add(e, h), 1))
		}}
	}
	cases = append(cases, mk("pos qmask ln max", true, true, true, true), mk("nopos", false, true, true, true),
		mk("noq", true, false, true, true), mk("noln", true, true, false, true), mk("mean", true, true, true, false),
		mk("pos qmask mean noln", true, true, false, false))
	cases = append(cases,
		zooCase{"fnn readout", []int{6, 4}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
			return fnn.New(scope.In("read-out"), x, zooClasses).NumHiddenLayers(2, 32).Residual(true).Normalization("layer").Done()
		}},
		zooCase{"fnn block", []int{6, 5, 4}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
			h := Add(x, fnn.New(scope.In("fnn"), x, 4).NumHiddenLayers(1, 4).Normalization("none").Done())
			return head(scope, h)
		}},
		zooCase{"layernorm 3d", []int{6, 5, 4}, 0, NodeTypeFusedLayerNorm, func(scope *model.Scope, x *Node) *Node {
			return head(scope, lnorm.LayerNorm(scope.In("norm2"), x, -1).Done())
		}},
	)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newZooModel(t, tc, uint64(100+i))
			d := len(m.params())
			v, u := randVec(m.rng, d), randVec(m.rng, tc.input[0]*zooClasses)
			jv, _ := m.jvpVJP(t, tc, v, u)
			fd := m.finiteDifference(t, tc, v, 1e-5)
			t.Logf("%s: J v vs FD rel %.3e", tc.name, ref.RelErr(jv, fd))
		})
	}
}
