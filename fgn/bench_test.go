package fgn

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkStep times one optimiser step of a linear softmax head at the shape of the paper's
// Figure 1(a): b=512, d=2048, C ∈ {16, 256, 4096}, float32, on the default backend. SGN and FGN
// (MatrixFree) apply their curvature through the head's exact JVP/VJP; FGNAutodiff uses the
// generic double-VJP closures of Linearize, FGNClosedForm the closed-form row Gram (run it in
// the SIMD build: GOEXPERIMENT=simd go test -run '^$' -bench Step ./fgn). Each step computes the
// logits, the direction and the parameter update inside one compiled graph; the parameters stay
// on the device between steps. It reports ms/step and MiB allocated on the Go heap per step.
func BenchmarkStep(b *testing.B) {
	const batch, dim = 512, 2048
	for _, numClasses := range []int{16, 256, 4096} {
		for _, method := range []string{"Adam", "SGN", "FGN", "FGNAutodiff", "FGNClosedForm"} {
			b.Run(fmt.Sprintf("C=%d/%s", numClasses, method), func(b *testing.B) {
				benchmarkStep(b, method, batch, dim, numClasses)
			})
		}
	}
}

func benchmarkStep(b *testing.B, method string, batch, dim, numClasses int) {
	rng := rand.New(rand.NewPCG(1, 2))
	hData := make([]float32, batch*dim)
	for i := range hData {
		hData[i] = float32(rng.NormFloat64())
	}
	labelData := make([]int32, batch)
	for i := range labelData {
		labelData[i] = int32(rng.IntN(numClasses))
	}
	h := tensors.FromFlatDataAndDimensions(hData, batch, dim)
	labels := tensors.FromValue(labelData)

	store := model.NewStore()
	scope := store.RootScope()
	wVar := scope.VariableWithValue("W", tensors.FromShape(shapesF32(dim, numClasses)))
	bVar := scope.VariableWithValue("bias", tensors.FromShape(shapesF32(numClasses)))
	var adam optimizer.Interface
	var opt Optimizer
	switch method {
	case "Adam":
		adam = optimizer.Adam().LearningRate(3e-4).Done()
	case "SGN":
		opt = SGN().Done()
	case "FGN":
		opt = FGN().RowOperator(MatrixFree).Done()
	default:
		opt = FGN().Done()
	}
	exec := model.MustNewExec(testBackend, store, func(scope *model.Scope, h, labels *Node) *Node {
		g := h.Graph()
		head := NewAffineHead(h, wVar.NodeValue(g), bVar.NodeValue(g))
		switch method {
		case "Adam":
			loss, _ := LossGradient(head, labels)
			adam.UpdateGraph(scope, g, loss)
			return loss
		case "FGNAutodiff": // generic closures
			return opt.UpdateGraphWithLinearization(scope, Linearize(head.Logits(), head.Params()), labels).Loss
		default: // SGN, FGN (matrix-free), FGNClosedForm
			return opt.UpdateGraphWithLinearization(scope, head, labels).Loss
		}
	})
	exec.MustCall(h, labels) // compile and warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		exec.MustCall(h, labels)[0].FinalizeAll()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MiB-alloc/step")
}
