package jvp_test

import (
	"fmt"
	"math"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/jvp"
)

// The example computes the Hessian-vector product H v of a least-squares loss by
// forward-over-reverse: the J v of its gradient, graph.Gradient's output, with respect to the
// weights. It checks it against central differences of the gradient.
func Example() {
	// L(w) = ½‖tanh(X w) − Y‖² for a batch X (4×3), targets Y (4×2) and weights w (3×2).
	loss := func(x, y, w *Node) *Node { return MulScalar(ReduceAllSum(Square(Sub(Tanh(MatMul(x, w)), y))), 0.5) }
	grad := func(x, y, w *Node) *Node { return Gradient(loss(x, y, w), w)[0] }
	const eps = 1e-5
	exec := MustNewExec(backend.MustNew(), func(x, y, w, v *Node) (hv, fd *Node) {
		hv = jvp.JVP([]*Node{grad(x, y, w)}, []*Node{w}, []*Node{v})[0]
		step := MulScalar(v, eps)
		fd = DivScalar(Sub(grad(x, y, Add(w, step)), grad(x, y, Sub(w, step))), 2*eps)
		return hv, fd
	})
	x := [][]float64{{0.3, -1.2, 0.5}, {1.1, 0.4, -0.7}, {-0.2, 0.9, 1.3}, {0.6, -0.5, -1.0}}
	y := [][]float64{{0.5, -0.2}, {-0.8, 0.1}, {0.3, 0.9}, {-0.4, -0.6}}
	w := [][]float64{{0.2, -0.4}, {0.7, 0.1}, {-0.3, 0.5}}
	v := [][]float64{{1, 0.5}, {-0.5, 2}, {0.3, -1}}
	out := exec.MustCall(x, y, w, v)
	hv, fd := out[0].Value().([][]float64), out[1].Value().([][]float64)
	var diff, norm float64
	for i := range hv {
		for j := range hv[i] {
			diff = math.Max(diff, math.Abs(hv[i][j]-fd[i][j]))
			norm = math.Max(norm, math.Abs(fd[i][j]))
		}
	}
	fmt.Printf("H v = %.4f\n", hv)
	fmt.Printf("max |H v − central differences| / max |central differences| < 1e-8: %v\n", diff/norm < 1e-8)
	// Output:
	// H v = [[-0.3619 -1.2621] [0.1132 3.2450] [-0.8281 -0.9234]]
	// max |H v − central differences| / max |central differences| < 1e-8: true
}

// ExampleRules registers the rule of an op that has none, Atan2, and differentiates through it.
func ExampleRules() {
	// atan2(y, x)′ = (x ẏ − y ẋ)/(x² + y²)
	jvp.Rules[NodeTypeAtan2] = func(node *Node, tangents []*Node) *Node {
		y, x := node.Inputs()[0], node.Inputs()[1]
		dy, dx := tangents[0], tangents[1]
		if dy == nil {
			dy = ZerosLike(y)
		}
		if dx == nil {
			dx = ZerosLike(x)
		}
		return Div(Sub(Mul(x, dy), Mul(y, dx)), Add(Square(x), Square(y)))
	}
	// The angle of the point (cos t, 2 sin t), and its derivative in t.
	exec := MustNewExec(backend.MustNew(), func(t *Node) *Node {
		angle := Atan2(MulScalar(Sin(t), 2), Cos(t))
		return jvp.JVP([]*Node{angle}, []*Node{t}, []*Node{OnesLike(t)})[0]
	})
	t := []float64{0, math.Pi / 4, 1}
	got := exec.MustCall(t)[0].Value().([]float64)
	for k, tk := range t {
		// d/dt atan(2 tan t) = 2/(cos² t + 4 sin² t)
		want := 2 / (math.Pow(math.Cos(tk), 2) + 4*math.Pow(math.Sin(tk), 2))
		fmt.Printf("t = %.4f: %.6f (exact %.6f)\n", tk, got[k], want)
	}
	// Output:
	// t = 0.0000: 2.000000 (exact 2.000000)
	// t = 0.7854: 0.800000 (exact 0.800000)
	// t = 1.0000: 0.640160 (exact 0.640160)
}
