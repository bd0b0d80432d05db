package fgn

import (
	"slices"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/jvp"
)

// recogniseAffineHead returns the AffineHead of the logits z when z is affine in the parameters
// (the trainable variables) as a dense head over features that no trainable variable reaches,
//
//	z = h W + 1 bᵀ   or   z = h W,
//
// as package jvp's MatchAffine finds it on the walk along which Linearize's forward mode
// propagates tangents: h may be the input features, or the output of a frozen backbone, of
// non-trainable variables or behind a StopGradient. Parameters other than W and b then do not
// reach the logits: their Jacobian is zero, and so is their direction. Otherwise it returns nil
// and the reason.
func recogniseAffineHead(z *Node, params Vec) (Linearization, string) {
	a, err := jvp.MatchAffine(z, params)
	if err != nil {
		return nil, err.Error()
	}
	head := newDenseHead(a.Features, a.Weights, a.Bias, a.Layout, z)
	var inert Vec
	for _, p := range params {
		if p != a.Weights && p != a.Bias {
			inert = append(inert, p)
		}
	}
	if len(inert) == 0 {
		return head, ""
	}
	return &headWithInertParams{AffineHead: head, inert: inert}, ""
}

// headWithInertParams is an affine head whose Params also list parameters that do not reach its
// logits (a backbone behind a StopGradient): their Jacobian blocks are zero.
type headWithInertParams struct {
	*AffineHead
	inert Vec
}

func (a *headWithInertParams) Params() Vec {
	return slices.Concat(a.AffineHead.Params(), a.inert)
}

func (a *headWithInertParams) VJP(m *Node) Vec {
	return slices.Concat(a.AffineHead.VJP(m), vecZerosLike(a.inert))
}

func (a *headWithInertParams) JVP(v Vec) *Node {
	return a.AffineHead.JVP(v[:len(v)-len(a.inert)])
}
