package train_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/memprobe"
)

var benchBackend = backend.MustNew()

// benchSteps are the steps the step benchmarks time, by benchmark name: Adam on the head's
// closed-form gradient; SGN (parameter-space CG on the full softmax GGN, warm-started); FGN
// (closed-form Gram, appendix F.2); FGN (matrix-free) through the head's exact JVP/VJP (eq. 4.8);
// and FGN (matrix-free, autodiff) through autodiff products.
var benchSteps = []struct {
	name string
	m    method.Method
	lin  string
}{
	{"Adam", method.Adam, fgn.ExactProducts},
	{"SGN", method.SGN, fgn.ExactProducts},
	{"FGN", method.FGN, fgn.ExactProducts},
	{"FGNMatrixFree", method.FGNMatrixFree, fgn.ExactProducts},
	{"FGNAutodiff", method.FGNMatrixFree, fgn.Autodiff},
}

// BenchmarkStep times the step of Figure 1(a) (train.NewStep, the training loop's step, with
// the hyper-parameters of mechanism.StepTimeConfig.StepConfig) on a linear softmax head at the
// figure's shape: b=512, d=2048, C ∈ {16, 256, 4096}, float32, on the default backend (run it in
// the SIMD build: GOEXPERIMENT=simd go test -run '^$' -bench Step ./experiments/train). Each
// step computes the logits, the direction and the parameter update inside one compiled graph;
// the parameters stay on the device between steps and hᵀ and the feature Gram h hᵀ + 1 are laid
// out once per batch, as in training on frozen features. The timed steps follow warmSteps
// untimed ones and run alone (memory is sampled over other untimed steps). It reports ms/step and
// the CPU time of all threads per step (cpu-ms/step, of which sys-ms/step in the kernel), the
// page faults (faults/step: first touches of memory the backend allocated) and collections
// (GC/step) during the timed steps, MiB allocated on the Go heap per step, and two peaks of the
// Go heap above the heap before the benchmark allocated anything:
//   - MiB-live-peak (and as a multiple of parameters + batch, live-peak/(params+batch)): the
//     memory a step holds (parameters, batch, per-batch layouts, optimiser state, the step's
//     temporaries), sampled while the collector runs back to back through liveSteps untimed
//     steps (memprobe.LivePeak): the heap less the buffers the backend has freed to its pool,
//     which the collector may release;
//   - MiB-heap-peak: the largest heap sampled every 200 µs during liveSteps untimed steps under
//     the default collector (memprobe.HeapPeak), which lets garbage grow to about the live heap
//     before collecting it (GOGC=100), so the live peak plus up to as much garbage;
//   - live-peak/estimate: the live peak over what train.EstimateMemory counts of what the
//     benchmark holds (a run's estimate less the loaded splits and the evaluator), at most 1
//     when the estimate bounds it.
func BenchmarkStep(b *testing.B) {
	for _, numClasses := range []int{16, 256, 4096} {
		for _, s := range benchSteps {
			b.Run(fmt.Sprintf("C=%d/%s", numClasses, s.name), func(b *testing.B) {
				benchmarkStep(b, s.m, s.lin, 512, 2048, numClasses)
			})
		}
	}
}

// BenchmarkStepCars196 is BenchmarkStep at the shape of the paper's Cars196 head: b=128,
// d=2048, C=196.
func BenchmarkStepCars196(b *testing.B) {
	for _, s := range benchSteps {
		b.Run(s.name, func(b *testing.B) { benchmarkStep(b, s.m, s.lin, 128, 2048, 196) })
	}
}

// scaleShapes are the (b, C) shapes of BenchmarkStepScale at d=2048: C ∈ {256, 4096, 32768} at
// b=512 and b ∈ {128, 512, 2048} at C=4096.
var scaleShapes = []struct{ batch, numClasses int }{
	{512, 256}, {512, 4096}, {512, 32768}, {128, 4096}, {2048, 4096},
}

// BenchmarkStepScale is BenchmarkStep along the two axes along which the work grows, the classes
// and the batch (scaleShapes), for the methods bench/peer.py has a PyTorch counterpart of (every
// one of benchSteps but FGN (matrix-free, autodiff)). At C=32768 W alone is 256 MiB and a step
// holds several d×C buffers (BENCHMARKS.md): run one shape at a time on a shared machine, e.g.
// -bench 'StepScale/b=512/C=32768/FGN$'.
func BenchmarkStepScale(b *testing.B) {
	for _, shape := range scaleShapes {
		for _, s := range benchSteps {
			if s.lin == fgn.Autodiff {
				continue
			}
			b.Run(fmt.Sprintf("b=%d/C=%d/%s", shape.batch, shape.numClasses, s.name), func(b *testing.B) {
				benchmarkStep(b, s.m, s.lin, shape.batch, 2048, shape.numClasses)
			})
		}
	}
}

func benchmarkStep(b *testing.B, m method.Method, lin string, batch, dim, numClasses int) {
	profile := mechanism.PaperStepTime()
	cfg := profile.StepConfig(m)
	cfg.Linearization = lin
	memprobe.Settle() // frees what earlier benchmarks pooled
	baseline := memprobe.HeapBytes()
	step, err := headStep(benchBackend, cfg, batch, dim, numClasses)
	if err != nil {
		b.Fatal(err)
	}
	defer step.Finalize()
	run := func() error { _, err := step.Run(0); return err }
	for range warmSteps {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	usage0 := rusage()
	b.ResetTimer()
	for range b.N {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	usage1 := rusage()
	runtime.ReadMemStats(&after)
	heap, err := memprobe.HeapPeak(liveSteps, run)
	if err != nil {
		b.Fatal(err)
	}
	heapPeak := float64(heap) - float64(baseline)
	live, err := memprobe.LivePeak(liveSteps, run)
	if err != nil {
		b.Fatal(err)
	}
	livePeak := float64(live) - float64(baseline)
	paramsAndBatch := float64(4 * (dim*numClasses + numClasses + batch*dim + batch))
	// What train.EstimateMemory counts of what this benchmark holds: a run's state and step
	// temporaries, and its batch with its layouts (EstimateMemory's data term less the loaded
	// splits and the evaluator's copies, which the benchmark does not hold).
	est := train.EstimateMemory(train.Config{Method: m, BatchSize: batch}, batch, 0, dim, numClasses)
	estimate := float64(est.State+est.Step+est.Data) - float64(4*2*batch*dim)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MiB-alloc/step")
	b.ReportMetric(livePeak/(1<<20), "MiB-live-peak")
	b.ReportMetric(livePeak/paramsAndBatch, "live-peak/(params+batch)")
	b.ReportMetric(heapPeak/(1<<20), "MiB-heap-peak")
	b.ReportMetric(livePeak/estimate, "live-peak/estimate")
	b.ReportMetric(float64(usage1.Minflt-usage0.Minflt)/float64(b.N), "faults/step")
	b.ReportMetric(float64(after.NumGC-before.NumGC)/float64(b.N), "GC/step")
	cpu := time.Duration(usage1.Utime.Nano() - usage0.Utime.Nano() + usage1.Stime.Nano() - usage0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/step")
	b.ReportMetric(float64(usage1.Stime.Nano()-usage0.Stime.Nano())/1e6/float64(b.N), "sys-ms/step")
}

// rusage returns the process's resource usage: CPU times and page faults, on every thread.
func rusage() syscall.Rusage {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return u
}

// liveSteps is the number of untimed steps over which memprobe.HeapPeak and memprobe.LivePeak
// sample the heap and live peaks.
const liveSteps = 3

// warmSteps is the number of untimed steps before the timed ones: the first compiles the step,
// and the backend's buffer pool fills over the first few, whose buffers the operating system
// maps on first touch (page faults/step reports what the timed steps still fault).
const warmSteps = 3

// headStep builds the step of cfg on be for a zero-initialised linear softmax head (W d×C,
// bias C) and one batch of b float32 standard normal features with uniform labels (fixed seed).
func headStep(be compute.Backend, cfg train.StepConfig, batch, dim, numClasses int) (*train.Step, error) {
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
	vars := []*model.Variable{
		scope.VariableWithValue("W", tensors.FromShape(shapes.Make(dtypes.Float32, dim, numClasses))),
		scope.VariableWithValue("bias", tensors.FromShape(shapes.Make(dtypes.Float32, numClasses))),
	}
	return train.NewStep(be, store, vars, cfg, []*tensors.Tensor{h}, []*tensors.Tensor{labels})
}
