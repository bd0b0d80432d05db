package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// runDemo trains an affine head on one fixed batch of a synthetic Gaussian mixture with each
// method, printing the loss before every step.
func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	examples := fs.Int("examples", 256, "number of examples (one batch)")
	dim := fs.Int("dim", 32, "feature dimension d")
	classes := fs.Int("classes", 10, "number of classes C (≥ 2)")
	steps := fs.Int("steps", 8, "steps per method")
	alpha := fs.Float64("alpha", 0.5, "step size α")
	lambda := fs.Float64("lambda", 1, "damping λ")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *examples < 1 || *dim < 1 || *steps < 1:
		return fmt.Errorf("--examples, --dim and --steps must be ≥ 1")
	case *classes < 2:
		return fmt.Errorf("--classes must be ≥ 2, got %d", *classes)
	case !(*alpha > 0):
		return fmt.Errorf("--alpha must be > 0, got %g", *alpha)
	}
	be, err := backend.New()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backend: %s\n", backend.Describe(be))
	h, labels := gaussianMixture(*seed, *examples, *dim, *classes)
	cfg := fgn.DefaultConfig
	cfg.Lambda = *lambda
	for _, method := range []fgn.Method{fgn.MethodFGNClosedForm, fgn.MethodFGN, fgn.MethodSGN, fgn.MethodGradient} {
		if err := demoMethod(be, method, h, labels, *dim, *classes, *steps, *alpha, cfg, stdout); err != nil {
			return err
		}
	}
	return nil
}

func demoMethod(be compute.Backend, method fgn.Method, h, labels *tensors.Tensor, dim, classes, steps int,
	alpha float64, cfg fgn.Config, stdout io.Writer) error {
	w := make([]float32, dim*classes)
	bias := make([]float32, classes)
	fmt.Fprintf(stdout, "\n%s (α=%g, λ=%g)\n%5s %10s %8s %10s %8s %8s\n", method, alpha, cfg.Lambda,
		"step", "loss", "CG its", "residual", "mean p†", "mean ξ")
	for step := range steps {
		res, err := fgn.AffineDirection(be, method, h, labels,
			tensors.FromFlatDataAndDimensions(w, dim, classes), tensors.FromFlatDataAndDimensions(bias, classes), cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%5d %10.5f %8d %10.2e %8.4f %8.4f\n", step, res.Loss, res.Iterations, res.Residual,
			res.MeanPDagger, res.MeanXi)
		tensors.MustConstFlatData(res.DW, func(d []float32) {
			for i := range w {
				w[i] += float32(alpha) * d[i]
			}
		})
		tensors.MustConstFlatData(res.DBias, func(d []float32) {
			for i := range bias {
				bias[i] += float32(alpha) * d[i]
			}
		})
	}
	return nil
}

// gaussianMixture draws examples from C unit-variance Gaussians whose means have standard normal
// coordinates.
func gaussianMixture(seed uint64, n, dim, classes int) (h, labels *tensors.Tensor) {
	rng := rand.New(rand.NewPCG(seed, 1))
	means := make([]float64, classes*dim)
	for i := range means {
		means[i] = rng.NormFloat64()
	}
	x := make([]float32, n*dim)
	y := make([]int32, n)
	for i := range n {
		y[i] = int32(rng.IntN(classes))
		for k := range dim {
			x[i*dim+k] = float32(means[int(y[i])*dim+k] + rng.NormFloat64())
		}
	}
	return tensors.FromFlatDataAndDimensions(x, n, dim), tensors.FromValue(y)
}
