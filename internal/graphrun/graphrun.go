// Package graphrun runs a GoMLX graph function once and returns its outputs as float64 slices:
// the host-side glue of package fgn's tests and of the notebooks (notebooks/nb), which compare
// graph results, in float32 or float64, with float64 dense references. It imports nothing of the
// project, so that fgn's own tests can use it.
package graphrun

import (
	"fmt"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Run compiles fn on backend, calls it with inputs and returns its outputs as flat float64
// slices (see Floats).
func Run[F graph.ExecGraphFn](backend compute.Backend, fn F, inputs ...any) ([][]float64, error) {
	exec, err := graph.NewExec(backend, fn)
	if err != nil {
		return nil, fmt.Errorf("compiling the graph: %w", err)
	}
	outs, err := exec.Call(inputs...)
	if err != nil {
		return nil, fmt.Errorf("running the graph: %w", err)
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		if res[i], err = Floats(o); err != nil {
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
	}
	return res, nil
}

// MustRun is Run for tests: it fails the test t on an error.
func MustRun[F graph.ExecGraphFn](t testing.TB, backend compute.Backend, fn F, inputs ...any) [][]float64 {
	t.Helper()
	out, err := Run(backend, fn, inputs...)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	return out
}

// Floats returns the values of a float64, float32, int32 or int64 tensor as a flat float64
// slice, row-major; other dtypes are an error.
func Floats(t *tensors.Tensor) ([]float64, error) {
	switch t.DType() {
	case dtypes.Float64:
		return tensors.MustCopyFlatData[float64](t), nil
	case dtypes.Float32:
		return widen(tensors.MustCopyFlatData[float32](t)), nil
	case dtypes.Int32:
		return widen(tensors.MustCopyFlatData[int32](t)), nil
	case dtypes.Int64:
		return widen(tensors.MustCopyFlatData[int64](t)), nil
	}
	return nil, fmt.Errorf("graphrun: cannot widen a %s tensor to float64", t.DType())
}

func widen[T float32 | int32 | int64](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
