package fgn

import (
	"fmt"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// TestMethodString checks the labels of the methods the repository names, in legends and tables.
func TestMethodString(t *testing.T) {
	for _, tc := range []struct {
		m    Method
		want string
	}{
		{Method{Curvature: FGNCurvature, RowOperator: ClosedFormGram}, "FGN (closed-form Gram)"},
		{Method{Curvature: FGNCurvature, RowOperator: ClosedFormGram, Linearization: ExactProducts}, "FGN (closed-form Gram)"},
		{Method{Curvature: FGNCurvature, RowOperator: MatrixFree}, "FGN (matrix-free)"},
		{Method{Curvature: FGNCurvature, RowOperator: MatrixFree, Linearization: Autodiff}, "FGN (matrix-free, autodiff)"},
		{Method{Curvature: FGNCurvature, RowOperator: CheaperRowOperator, Linearization: Recorded}, "FGN (cheaper, recorded)"},
		{Method{Curvature: SGNCurvature}, "SGN"},
		{Method{Curvature: SGNCurvature, Linearization: Autodiff}, "SGN (autodiff)"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.m, got, tc.want)
		}
	}
}

// TestDirectionMethod checks the method a direction reports: FGN with the row operator it applied
// (CheaperRowOperator resolved as closedFormGram resolves it, TestRowOperatorChoice), SGN with
// none, and no linearisation for a linearisation the caller gave.
func TestDirectionMethod(t *testing.T) {
	g := NewGraph(testBackend, "method")
	head := func(b, d, c int) *AffineHead {
		return NewAffineHead(Parameter(g, fmt.Sprintf("h%d", b), shapesF32(b, d)),
			Parameter(g, fmt.Sprintf("W%d", b), shapesF32(d, c)), Parameter(g, fmt.Sprintf("bias%d", b), shapesF32(c)))
	}
	mnist, cars := head(600, 784, 10), head(128, 2048, 196)
	labels := map[int]*Node{}
	for _, b := range []int{600, 128} {
		labels[b] = Parameter(g, fmt.Sprintf("y%d", b), shapes.Make(dtypes.Int32, b))
	}
	for _, tc := range []struct {
		name string
		c    *GNConfig
		lin  Linearization
		b    int
		want Method
	}{
		{"cheaper on MNIST shapes", FGN(), mnist, 600, Method{Curvature: FGNCurvature, RowOperator: MatrixFree}},
		{"cheaper on Cars196 shapes", FGN(), cars, 128, Method{Curvature: FGNCurvature, RowOperator: ClosedFormGram}},
		{"closed form on autodiff", FGN().RowOperator(ClosedFormGram), Linearize(cars.Logits(), cars.Params()), 128,
			Method{Curvature: FGNCurvature, RowOperator: MatrixFree}},
		{"SGN", SGN(), cars, 128, Method{Curvature: SGNCurvature}},
	} {
		if got := tc.c.Direction(tc.lin, labels[tc.b], nil).Method; got != tc.want {
			t.Errorf("%s: Direction.Method = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
