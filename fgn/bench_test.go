package fgn

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// stepMethods are the steps BenchmarkStep times: GoMLX's Adam on the head's closed-form
// gradient; SGN (parameter-space CG on the
// full softmax GGN, warm-started); FGN with the closed-form row Gram of appendix F.2; FGN
// applying the row operator matrix-free through the head's exact JVP/VJP (eq. 4.8); and FGN
// matrix-free through the generic double-VJP closures of Linearize.
var stepMethods = []string{"Adam", "SGN", "FGN", "FGNMatrixFree", "FGNAutodiff"}

// Step hyper-parameters, those of Figure 1(a) (experiments/mechanism): Adam's learning rate, the
// SGN/FGN step size α, damping λ = 1 and at most 5 CG iterations with tolerance 1e-5.
const (
	benchAdamLR   = 1e-3
	benchStepSize = 1
)

// BenchmarkStep times one optimiser step of a linear softmax head at the shape of the paper's
// Figure 1(a): b=512, d=2048, C ∈ {16, 256, 4096}, float32, on the default backend (run it in
// the SIMD build: GOEXPERIMENT=simd go test -run '^$' -bench Step ./fgn). Each step computes the
// logits, the direction and the parameter update inside one compiled graph; the parameters stay
// on the device between steps and the feature Gram h hᵀ + 1 and hᵀ are laid out once per batch,
// as in training on frozen features. It reports ms/step, MiB allocated on the Go heap per step, and
// the peak of the Go heap during the timed steps (parameters, batch, optimiser state and every
// temporary, including garbage not yet collected) in MiB and as a multiple of parameters + batch.
func BenchmarkStep(b *testing.B) {
	for _, numClasses := range []int{16, 256, 4096} {
		for _, method := range stepMethods {
			b.Run(fmt.Sprintf("C=%d/%s", numClasses, method), func(b *testing.B) {
				benchmarkStep(b, method, 512, 2048, numClasses)
			})
		}
	}
}

// BenchmarkStepCars196 is BenchmarkStep at the shape of the paper's Cars196 head: b=128,
// d=2048, C=196.
func BenchmarkStepCars196(b *testing.B) {
	for _, method := range stepMethods {
		b.Run(method, func(b *testing.B) { benchmarkStep(b, method, 128, 2048, 196) })
	}
}

func benchmarkStep(b *testing.B, method string, batch, dim, numClasses int) {
	runtime.GC()
	baseline := heapBytes()
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
	gram := MustExecOnce(testBackend, FeatureGram, h)
	ht := MustExecOnce(testBackend, func(h *Node) *Node { return Transpose(h, 0, 1) }, h)

	store := model.NewStore()
	scope := store.RootScope()
	wVar := scope.VariableWithValue("W", tensors.FromShape(shapesF32(dim, numClasses)))
	bVar := scope.VariableWithValue("bias", tensors.FromShape(shapesF32(numClasses)))
	var adam optimizer.Interface
	var opt Optimizer
	switch method {
	case "Adam":
		adam = optimizer.Adam().LearningRate(benchAdamLR).Done()
	case "SGN":
		opt = SGN().LearningRate(benchStepSize).Done()
	default:
		rowOperator := ClosedFormGram
		if method != "FGN" {
			rowOperator = MatrixFree
		}
		opt = FGN().LearningRate(benchStepSize).RowOperator(rowOperator).Done()
	}
	exec := model.MustNewExec(testBackend, store, func(scope *model.Scope, h, labels, gram, ht *Node) *Node {
		g := h.Graph()
		head := NewAffineHead(h, wVar.NodeValue(g), bVar.NodeValue(g))
		head.FeatureGram, head.HT = gram, ht
		switch method {
		case "Adam":
			loss, grad := LossGradient(head, labels)
			adamWithGradient(adam, scope, g, head.Params(), grad)
			return loss
		case "FGNAutodiff":
			return opt.UpdateGraphWithLinearization(scope, Linearize(head.Logits(), head.Params()), labels).Loss
		default:
			return opt.UpdateGraphWithLinearization(scope, head, labels).Loss
		}
	})
	exec.MustCall(h, labels, gram, ht)[0].FinalizeAll() // compile and warm up

	peak := make(chan uint64)
	stop := make(chan struct{})
	go samplePeakHeap(stop, peak)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		exec.MustCall(h, labels, gram, ht)[0].FinalizeAll()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	close(stop)
	peakBytes := float64(<-peak) - float64(baseline)
	paramsAndBatch := float64(4 * (dim*numClasses + numClasses + batch*dim + batch))
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MiB-alloc/step")
	b.ReportMetric(peakBytes/(1<<20), "MiB-peak")
	b.ReportMetric(peakBytes/paramsAndBatch, "peak/(params+batch)")
}

// adamWithGradient applies GoMLX's Adam with the head's closed-form gradient grad of params
// (LossGradient: one VJP, no reverse pass through the loss), handed over in the order in which
// Adam visits the trainable variables of scope.
func adamWithGradient(adam optimizer.Interface, scope *model.Scope, g *Graph, params, grad Vec) {
	var ordered []*Node
	for v := range scope.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			ordered = append(ordered, grad[slices.Index(params, v.NodeValue(g))])
		}
	}
	adam.(interface {
		UpdateGraphWithGradients(*model.Scope, []*Node, dtypes.DType)
	}).UpdateGraphWithGradients(scope, ordered, grad[0].DType())
}

// heapBytes returns the bytes of live and not-yet-collected heap objects.
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// samplePeakHeap samples heapBytes every 200µs until stop is closed, then sends the largest.
func samplePeakHeap(stop <-chan struct{}, peak chan<- uint64) {
	var largest uint64
	ticker := time.NewTicker(200 * time.Microsecond)
	defer ticker.Stop()
	for {
		largest = max(largest, heapBytes())
		select {
		case <-stop:
			peak <- largest
			return
		case <-ticker.C:
		}
	}
}
