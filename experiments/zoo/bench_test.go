package zoo

import (
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/internal/memprobe"
	"github.com/fgn-paper/fgn/jvp"
)

// costOptimizers are the optimizers BenchmarkModelZoo costs, each at its default settings (Adam's
// learning rate does not change its cost).
var costOptimizers = []Optimizer{
	{"Adam", func() optimizer.Interface { return optimizer.Adam().Done() }},
	{"SGN", func() optimizer.Interface { return fgn.SGN().Done() }},
	{"FGN", func() optimizer.Interface { return fgn.FGN().Done() }},
}

// benchBatch is the batch size of the zoo's benchmarks, that of its training runs.
const benchBatch = 128

// BenchmarkModelZoo times one training step of each zoo model with Adam, SGN and FGN at their
// default settings, through train.Trainer.TrainStep (the step train.Loop runs, fgn.Loss as the
// loss) on the first 128 training images of data/digits (float32, seed 1), each timed step from
// the state that warmupSteps steps on them reached, on the default backend (run it in the SIMD
// build: GOEXPERIMENT=simd go test -run '^$' -bench ModelZoo ./experiments/zoo). The paper's cost
// accounting (sec. 4.3, appendix "Cost accounting"): a step
// of FGN or SGN is the logits, N_CG·(JVP + VJP) and one VJP, plus what the stopping rule and the
// damping policy add; BenchmarkZooProducts times those products. It reports ms/step, the CPU
// time of all threads per step, MiB allocated per step (mean of three), and the live and sampled heap peaks above
// the heap before the benchmark built anything, sampled over untimed steps as BenchmarkStep
// (experiments/train) samples them (memprobe).
func BenchmarkModelZoo(b *testing.B) {
	be := testBackend
	x, y := benchData(b)
	for _, m := range benchModels() {
		for _, opt := range costOptimizers {
			b.Run(m.Name+"/"+opt.Name, func(b *testing.B) {
				memprobe.Settle()
				baseline := memprobe.HeapBytes()
				trainer := NewTrainer(be, m, opt, 1)
				step := benchStep(trainer, x, y)
				restore, cpu, err := timeFromState(b, be, trainer.Store(), step)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(msPer(cpu, b.N), "cpu-ms/step")
				alloc, err := allocPerStep(restore, step)
				if err != nil {
					b.Fatal(err)
				}
				heapPeak, err := memprobe.HeapPeak(3, step)
				if err != nil {
					b.Fatal(err)
				}
				livePeak, err := memprobe.LivePeak(3, step)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
				b.ReportMetric(alloc/(1<<20), "MiB-alloc/step")
				b.ReportMetric(mib(livePeak, baseline), "MiB-live-peak")
				b.ReportMetric(mib(heapPeak, baseline), "MiB-heap-peak")
			})
		}
	}
}

// benchStep returns one training step of trainer (train.Trainer.TrainStep, the step train.Loop
// runs) on the benchmarks' batch, images x and labels y (benchData), given as fresh tensors each
// time: the Trainer takes ownership of them.
func benchStep(trainer *train.Trainer, x []float32, y []int32) func() error {
	return func() error {
		_, err := trainer.TrainStep(train.Batch{
			Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(slices.Clone(x), benchBatch, digits.Pixels)},
			Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(slices.Clone(y), benchBatch, 1)},
		})
		return err
	}
}

// stepParts are FGN's defaults and the defaults without one of their parts each, for
// BenchmarkStepParts, with Adam (the learning rate does not change its cost) for reference.
var stepParts = []Optimizer{
	{"FGN()", func() optimizer.Interface { return fgn.FGN().Done() }},
	{"without the damping metric", func() optimizer.Interface { return fgn.FGN().ScaledDamping(false).Done() }},
	{"at full length", func() optimizer.Interface { return fgn.FGN().GGNStepLength(false).Done() }},
	{"ν along the gradient", func() optimizer.Interface {
		lm := fgn.LevenbergMarquardt()
		lm.WholeVariance = false
		return fgn.FGN().DampingPolicy(lm).Done()
	}},
	{"constant λ at full length", func() optimizer.Interface {
		return fgn.FGN().DampingPolicy(fgn.ConstantDamping{}).GGNStepLength(false).Done()
	}},
	{"FGN(), 1 CG iteration", func() optimizer.Interface { return fgn.FGN().CGMaxIterations(1).Done() }},
	{"constant λ at full length, 1 CG iteration", func() optimizer.Interface {
		return fgn.FGN().DampingPolicy(fgn.ConstantDamping{}).GGNStepLength(false).CGMaxIterations(1).Done()
	}},
	{"Adam", func() optimizer.Interface { return optimizer.Adam().Done() }},
}

// BenchmarkStepParts times a training step of the digits MLPs (BenchmarkModelZoo's batch, state
// and timing) with FGN's defaults and with each of their parts left out in turn (stepParts): the
// damping metric (Settings.ScaledDamping), the GGN's step length (Settings.GGNStepLength, one JVP
// of the direction), the whole-variance noise estimate (LMDamping.WholeVariance, one VJP of a
// random-sign probe), and Levenberg-Marquardt itself with the step length (its trial loss, one
// forward pass at the updated parameters, and its noise estimate), beside Adam's. Since λ sets
// how many CG iterations a step makes, the last two time FGN() and the constant-λ step at one CG
// iteration each, which leaves Levenberg-Marquardt's own cost as their difference. On these small
// models a step's time is mostly the backend's per-operation overhead, so each part costs what its
// operations do more than what its products do.
func BenchmarkStepParts(b *testing.B) {
	x, y := benchData(b)
	for _, m := range benchModels() {
		if m.Name != "relu-mlp" && m.Name != "tanh-mlp" {
			continue
		}
		for _, opt := range stepParts {
			b.Run(m.Name+"/"+opt.Name, func(b *testing.B) {
				trainer := NewTrainer(testBackend, m, opt, 1)
				if _, _, err := timeFromState(b, testBackend, trainer.Store(), benchStep(trainer, x, y)); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
			})
		}
	}
}

// unrolled is an autodiff linearisation without its WhileSafe method: CG is unrolled and every
// iteration up to the cap is computed, masked once CG has stopped.
type unrolled struct{ fgn.LogitsEvaluator }

// BenchmarkZooFixedCG times an SGN and an FGN step of each zoo model at their default settings
// but with every one of the N_CG = 5 CG iterations computed (CG unrolled: the linearisation is
// fgn.Linearize without its WhileSafe method), so that both make the products of the paper's
// cost accounting for the same N_CG: the logits, N_CG·(JVP + VJP) and one VJP. With CG in its
// While loop (BenchmarkModelZoo) a step costs what its CG iterations cost, and CG stops after as
// many as each method's system needs. The step is fgn's UpdateGraphWithLinearization on the
// batch of BenchmarkModelZoo, with fgn.Loss's cross-entropy, each timed step from the state that
// warmupSteps steps reached.
func BenchmarkZooFixedCG(b *testing.B) {
	x, y := benchData(b)
	for _, m := range benchModels() {
		for _, opt := range []struct {
			name string
			c    *fgn.GNConfig
		}{{"SGN", fgn.SGN()}, {"FGN", fgn.FGN()}} {
			b.Run(m.Name+"/"+opt.name, func(b *testing.B) {
				store := model.NewStore()
				store.SetParam(model.ParamInitialSeed, int64(1))
				store.SetParams(m.Params)
				gn := opt.c.Done()
				exec, err := model.NewExec(testBackend, store, func(scope *model.Scope, x, labels *Node) *Node {
					store.SetTraining(x.Graph(), true)
					logits := m.Fn(scope, x)
					var params fgn.Vec
					for v := range scope.IterVariables() {
						params = append(params, v.NodeValue(x.Graph()))
					}
					return gn.UpdateGraphWithLinearization(scope, unrolled{fgn.Linearize(logits, params)}, labels).Loss
				})
				if err != nil {
					b.Fatal(err)
				}
				defer exec.Finalize()
				inputs := tensors.FromFlatDataAndDimensions(x, benchBatch, digits.Pixels)
				labels := tensors.FromFlatDataAndDimensions(y, benchBatch)
				step := func() error {
					out, err := exec.Exec(inputs, labels)
					for _, t := range out {
						t.FinalizeAll()
					}
					return err
				}
				_, cpu, err := timeFromState(b, testBackend, store, step)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(msPer(cpu, b.N), "cpu-ms/step")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
			})
		}
	}
}

// BenchmarkZooProducts times, for each zoo model on the batch of BenchmarkModelZoo, the graphs
// of the products a Gauss-Newton step is made of: the logits z alone (forward), the logits and
// one JVP J_z v of fgn.Linearize (forward+JVP), and the logits and one VJP J_zᵀu
// (forward+VJP), with v the parameters themselves and u the logits. Each graph takes the
// parameters as inputs, as a training step does. Besides each graph's ms per call it reports
// the product's cost relative to a forward pass, (t(forward+product) − t(forward)) / t(forward),
// in the forward+JVP and forward+VJP sub-benchmarks (JVP/forward, VJP/forward), from the
// forward time measured just before them.
func BenchmarkZooProducts(b *testing.B) {
	be := testBackend
	x, _ := benchData(b)
	for _, m := range benchModels() {
		var forward float64
		for _, g := range []struct {
			name  string
			build func(logits *Node, params fgn.Vec) []*Node
		}{
			{"forward", func(logits *Node, _ fgn.Vec) []*Node { return []*Node{logits} }},
			{"forward+JVP", func(logits *Node, params fgn.Vec) []*Node {
				return []*Node{logits, fgn.Linearize(logits, params).JVP(params)}
			}},
			{"forward+VJP", func(logits *Node, params fgn.Vec) []*Node {
				return append([]*Node{logits}, fgn.Linearize(logits, params).VJP(logits)...)
			}},
		} {
			b.Run(m.Name+"/"+g.name, func(b *testing.B) {
				store := model.NewStore()
				store.SetParam(model.ParamInitialSeed, int64(1))
				store.SetParams(m.Params)
				exec, err := model.NewExec(be, store, func(scope *model.Scope, x *Node) []*Node {
					store.SetTraining(x.Graph(), true)
					logits := m.Fn(scope, x)
					var params fgn.Vec
					for v := range scope.IterVariables() {
						params = append(params, v.NodeValue(x.Graph()))
					}
					return g.build(logits, params)
				})
				if err != nil {
					b.Fatal(err)
				}
				defer exec.Finalize()
				input := tensors.FromFlatDataAndDimensions(x, benchBatch, digits.Pixels)
				run := func() {
					out, err := exec.Exec(input)
					if err != nil {
						b.Fatal(err)
					}
					for _, t := range out {
						t.FinalizeAll()
					}
				}
				run()
				b.ResetTimer()
				cpu0 := cpuTime()
				for range b.N {
					run()
				}
				b.ReportMetric(msPer(cpuTime()-cpu0, b.N), "cpu-ms/call")
				ms := float64(b.Elapsed().Microseconds()) / 1e3 / float64(b.N)
				b.ReportMetric(ms, "ms/call")
				switch {
				case g.name == "forward":
					forward = ms
				case forward > 0:
					b.ReportMetric((ms-forward)/forward, strings.TrimPrefix(g.name, "forward+")+"/forward")
				}
			})
		}
	}
}

// benchModels returns the zoo's models of the digits, those the benchmarks cost on benchData, and
// after the CNN the CNN with its convolutions computed as matrix products (jvp.LowerConvolutions),
// as a model opts in.
func benchModels() []Model {
	var ms []Model
	for _, m := range Models {
		if m.Task != Digits {
			continue
		}
		ms = append(ms, m)
		if m.Name == "cnn" {
			lowered := m
			lowered.Name = "cnn-lowered"
			lowered.Fn = func(scope *model.Scope, x *Node) *Node { return jvp.LowerConvolutions(CNN(scope, x))[0] }
			ms = append(ms, lowered)
		}
	}
	return ms
}

// warmupSteps is the number of steps a step benchmark takes before its timed ones, each of which
// then starts from the state those reached (stateRestorer): every timed step does the same work at
// one early-training state. Steps that followed one another would time a trajectory instead: the
// model fits the benchmark's one batch, CG's iteration counts change with λ, and a CG computed to
// its cap after it has converged (unrolled, as BenchmarkZooFixedCG and the PyTorch peer compute
// it) multiplies vectors of subnormal magnitude, at which the CPU's arithmetic runs several times
// slower.
const warmupSteps = 10

// stateRestorer returns a function that sets every variable of store (the model's parameters and
// the optimizer's state) back to the value it holds now, as a copy on be's device 0.
func stateRestorer(be compute.Backend, store *model.Store) (func() error, error) {
	type saved struct {
		v *model.Variable
		t *tensors.Tensor
	}
	var state []saved
	for v := range store.IterVariables() {
		value, err := v.Value()
		if err != nil {
			return nil, err
		}
		t, err := value.LocalClone()
		if err != nil {
			return nil, err
		}
		state = append(state, saved{v, t})
	}
	return func() error {
		for _, s := range state {
			t, err := s.t.OnDeviceClone(be, 0)
			if err != nil {
				return err
			}
			if err := s.v.SetValue(t); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// timeFromState takes warmupSteps + 1 steps (the first compiles the step), then times b.N calls
// of step, each from the state those reached in store (restored with the timer stopped, see
// stateRestorer). It returns the function that restores that state and the CPU time of all
// threads that the timed steps took.
func timeFromState(b *testing.B, be compute.Backend, store *model.Store, step func() error) (restore func() error,
	cpu time.Duration, err error) {
	for range warmupSteps + 1 {
		if err := step(); err != nil {
			return nil, 0, err
		}
	}
	if restore, err = stateRestorer(be, store); err != nil {
		return nil, 0, err
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := restore(); err != nil {
			return nil, 0, err
		}
		cpu0 := cpuTime()
		b.StartTimer()
		if err := step(); err != nil {
			return nil, 0, err
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
	}
	return restore, cpu, nil
}

// allocPerStep returns the bytes that a step from the state restore sets allocates, the mean
// over three steps.
func allocPerStep(restore, step func() error) (float64, error) {
	const steps = 3
	var total uint64
	for range steps {
		if err := restore(); err != nil {
			return 0, err
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := step(); err != nil {
			return 0, err
		}
		runtime.ReadMemStats(&after)
		total += after.TotalAlloc - before.TotalAlloc
	}
	return float64(total) / steps, nil
}

// benchData returns the first benchBatch training images and labels of digits.Split(1).
func benchData(b *testing.B) ([]float32, []int32) {
	b.Helper()
	trainSet, _, err := digits.Split(1)
	if err != nil {
		b.Fatal(err)
	}
	return trainSet.X[:benchBatch*digits.Pixels], trainSet.Y[:benchBatch]
}

// cpuTime returns the CPU time the process has used, user and system, on every thread: on a
// machine shared with other jobs it grows with the work done where wall time also counts the
// waits for a core.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// msPer returns d in ms per each of n runs.
func msPer(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1e3 / float64(n) }

// mib returns the bytes above baseline in MiB.
func mib(bytes, baseline uint64) float64 {
	return (float64(bytes) - float64(baseline)) / (1 << 20)
}
