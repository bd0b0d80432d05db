// Package nb holds the glue shared by the GoNB notebooks in this directory: running a graph on
// the project's backend, numeric checks that print the measured error next to its tolerance and
// stop the cell when it does not hold, and the notebooks' figures (PNG, shown inline with
// gonbui). It contains none of the paper's mathematics: that lives in package fgn, which every
// notebook calls.
package nb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// FailedPrefix starts the line Check prints for a failed check; the notebook CI also looks for it.
const FailedPrefix = "CHECK FAILED"

// exit ends the cell's program; a variable so that tests can observe it.
var exit = os.Exit

// Check prints one line with the measured error of a numeric check next to its tolerance. When
// the check does not hold (err > tol, or err is NaN) it prints the line prefixed by FailedPrefix
// to stderr and ends the program with status 1, which fails the notebook cell.
func Check(what string, err, tol float64) {
	if err <= tol {
		fmt.Printf("ok    %-58s error %9.3g  (tolerance %.3g)\n", what, err, tol)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %s: error %.3g exceeds tolerance %.3g\n", FailedPrefix, what, err, tol)
	exit(1)
}

// Require fails the cell, like a failed Check, when cond is false.
func Require(cond bool, format string, args ...any) {
	if cond {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", FailedPrefix, fmt.Sprintf(format, args...))
	exit(1)
}

// Must returns v, or fails the cell when err is not nil.
func Must[T any](v T, err error) T {
	Require(err == nil, "%v", err)
	return v
}

// Backend returns the backend selected by GOMLX_BACKEND (the pure-Go backend when unset).
func Backend() compute.Backend {
	return Must(backend.New())
}

// Run compiles fn on b, calls it with inputs and returns its outputs as float64 slices
// (graphrun.Run: float32 and integer outputs are widened). It fails the cell on any error.
func Run[F graph.ExecGraphFn](b compute.Backend, fn F, inputs ...any) [][]float64 {
	return Must(graphrun.Run(b, fn, inputs...))
}

// Floats returns the tensor's values as a flat float64 slice (graphrun.Floats), or fails the
// cell on a dtype it cannot widen.
func Floats(t *tensors.Tensor) []float64 {
	return Must(graphrun.Floats(t))
}

// RelErr returns ‖a−b‖₂ / ‖b‖₂ (‖a−b‖₂ when b = 0); +Inf when the lengths differ.
func RelErr(a, b []float64) float64 { return ref.RelErr(a, b) }

// MaxAbs returns max_i |a_i| (0 for an empty slice).
func MaxAbs(a []float64) float64 { return ref.MaxAbs(a) }

// Norm returns ‖a‖₂.
func Norm(a []float64) float64 {
	s := 0.0
	for _, x := range a {
		s += x * x
	}
	return math.Sqrt(s)
}

// RandMatrix returns an r×c matrix of independent N(0, scale²) entries drawn from rng.
func RandMatrix(rng *rand.Rand, r, c int, scale float64) [][]float64 {
	return ref.RandMatrix(rng, r, c, scale)
}

// RandLabels returns n labels drawn uniformly from [0, numClasses).
func RandLabels(rng *rand.Rand, n, numClasses int) []int32 { return ref.RandLabels(rng, n, numClasses) }

// Square returns the flat row-major n×n slice as a gonum matrix (copied).
func Square(flat []float64) *mat.Dense {
	n := int(math.Round(math.Sqrt(float64(len(flat)))))
	Require(n*n == len(flat), "nb.Square: %d values do not form a square matrix", len(flat))
	return mat.NewDense(n, n, append([]float64(nil), flat...))
}

// SymEigen returns the eigenvalues, ascending, of the symmetric part of the square matrix a.
func SymEigen(a mat.Matrix) []float64 {
	n, _ := a.Dims()
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	var e mat.EigenSym
	Require(e.Factorize(s, false), "nb.SymEigen: eigendecomposition failed")
	return e.Values(nil)
}
