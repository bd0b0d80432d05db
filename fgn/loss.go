package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

var _ loss.LossFn = Loss

// Loss is the loss function to give GoMLX's train.Trainer when the optimizer is FGN or SGN (it
// has the signature of loss.LossFn): the mean softmax cross-entropy (1/b) Σ_i φ(s_i) (eq. 2.4) of
// the logits predictions[0] (b×C) for the integer labels labels[0] (b, or b×1 as GoMLX's sparse
// categorical losses take them).
//
// Gauss-Newton curvature needs the per-example logits and labels, not only the scalar loss, so
// Loss also records both in the graph, where the optimizers' UpdateGraph finds them. With any
// other optimizer it is the plain cross-entropy. It panics on shapes it cannot use.
func Loss(labels, predictions []*Node) *Node {
	if len(labels) != 1 || len(predictions) != 1 {
		exceptions.Panicf("fgn.Loss: want one labels tensor and one logits tensor, got %d and %d",
			len(labels), len(predictions))
	}
	logits, y := predictions[0], labels[0]
	if y.Rank() == 2 && y.Shape().Dim(1) == 1 {
		y = Reshape(y, y.Shape().Dim(0))
	}
	l := ReduceAllMean(marginOf(logits, y).Loss)
	rec := recordOf(logits.Graph())
	rec.losses++
	rec.logits, rec.labels, rec.loss = logits, y, l
	return l
}

// RecordLinearization records lin as the linearisation of the logits lin.Logits() in the graph
// being built, for FGN and SGN to use in place of the one they build themselves: a model function
// that knows its Jacobian products in a closed form calls it and returns lin.Logits() as its
// prediction. It is for closed forms the optimizers cannot see in the graph: they recognise an
// affine head z = h W (+ 1 bᵀ) on features that no trainable variable reaches by themselves (see
// Optimizer), and linearise any other logits by autodiff (Linearize). An affine head records a
// NewAffineHead only to pass its own feature layout (AffineHead.HT, AffineHead.FeatureGram).
// lin.Params() must be the current values (v.NodeValue(g)) of the trainable variables that the
// optimizer steps, in any order (see Optimizer).
func RecordLinearization(lin Linearization) {
	rec := recordOf(lin.Logits().Graph())
	if rec.lin != nil {
		exceptions.Panicf("fgn.RecordLinearization: a linearisation is already recorded for this graph")
	}
	rec.lin = lin
}

// graphRecord is what Loss and RecordLinearization record in a graph for the optimizers, and the
// batch quantities that Loss and a step share (marginOf, probabilitiesOf).
type graphRecord struct {
	lin                  Linearization // recorded by the model, nil for autodiff
	logits, labels, loss *Node         // recorded by Loss
	losses               int           // calls of Loss in the graph

	margins map[[2]*Node]*gn.Margin // by logits and labels
	probs   map[*Node]*Node         // by logits
}

// marginOf returns the margin quantities (gn.NewMargin) of logits and labels, formed once in their
// graph: the loss, the direction, the noise estimate, the step length and the damping's model of
// a step read the same nodes. A backend that does not eliminate common subexpressions (the pure-Go
// backend) would otherwise compute each b×C quantity once for each of them.
func marginOf(logits, labels *Node) *gn.Margin {
	rec := recordOf(logits.Graph())
	key := [2]*Node{logits, labels}
	if m, found := rec.margins[key]; found {
		return m
	}
	m := gn.NewMargin(logits, labels)
	if rec.margins == nil {
		rec.margins = make(map[[2]*Node]*gn.Margin)
	}
	rec.margins[key] = m
	return m
}

// probabilitiesOf returns the softmax probabilities of logits (b×C) along their last axis, formed
// once in their graph (see marginOf).
func probabilitiesOf(logits *Node) *Node {
	rec := recordOf(logits.Graph())
	if p, found := rec.probs[logits]; found {
		return p
	}
	p := Softmax(logits, -1)
	if rec.probs == nil {
		rec.probs = make(map[*Node]*Node)
	}
	rec.probs[logits] = p
	return p
}

// graphRecordPath is the graph parameter (model.SetGraphParam) that holds the graphRecord.
const graphRecordPath = "/fgn/record"

// recordOf returns the graph's record, creating it on first use.
func recordOf(g *Graph) *graphRecord {
	if v, found := model.GetGraphParam(g, graphRecordPath); found {
		return v.(*graphRecord)
	}
	rec := &graphRecord{}
	model.SetGraphParam(g, graphRecordPath, rec)
	return rec
}
