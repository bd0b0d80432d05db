package mechanism

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func shapesF64(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float64, dims...) }

// callFlat runs exec and returns its float64 outputs as flat slices, releasing the tensors.
func callFlat(exec *Exec, args ...any) ([][]float64, error) {
	outs, err := exec.Call(args...)
	if err != nil {
		return nil, err
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		if o.DType() != dtypes.Float64 {
			return nil, fmt.Errorf("output %d has dtype %s, want float64", i, o.DType())
		}
		res[i] = tensors.MustCopyFlatData[float64](o)
		o.FinalizeAll()
	}
	return res, nil
}
