package train

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/method"
)

// MemoryEstimate is an estimate, from the shapes alone, of the bytes a training run (Run) holds
// at its peak, by what holds them. Every term is float32 (4 bytes per entry).
type MemoryEstimate struct {
	// Data: the training and held-out features as loaded, the evaluator's copy of both, the
	// static batches, and the per-batch layouts of an affine head (hᵀ; the feature Gram
	// h hᵀ + 1, b×b per batch, for FGN (closed-form Gram)).
	Data int64
	// State: the parameters P times what the method holds of their size at its peak (Adam: the
	// parameters, two moments, the gradient and the update's temporaries, 6P; SGN: the
	// parameters, warm start, CG's vectors and products, 10P; FGN (closed-form Gram): the
	// parameters, the direction and the update, 3P; FGN (matrix-free): 4P, the parameters, CG's
	// accumulated back-projection, the VJP of an iteration and the update), plus 2P for the
	// autodiff closures of an MLP.
	State int64
	// Step: the step's b×(C + hidden) temporaries (logits, margin quantities, products' operands;
	// stepTemporaries of them) and the pure-Go matrix kernel's packing buffers (kernelBuffers).
	Step int64
	// Evaluation: the evaluation graph's logits and margin over the larger split at once
	// (evalTemporaries N×(C + hidden) buffers and an N×C mask) and a copy of the parameters.
	Evaluation int64
}

// The constants of EstimateMemory, from the live peaks BenchmarkStepScale measures (BENCHMARKS.md)
// with margin: they bound them from above at every shape measured.
const (
	stepTemporaries = 6
	evalTemporaries = 4
	kernelBuffers   = 64 << 20
)

// Total is the estimated peak in bytes.
func (e MemoryEstimate) Total() int64 { return e.Data + e.State + e.Step + e.Evaluation }

// stateMultiple is what a step of m holds at its peak, in multiples of the parameters (see
// MemoryEstimate.State).
func stateMultiple(m method.Method) int64 {
	switch m {
	case method.Adam:
		return 6
	case method.SGN:
		return 10
	case method.FGN:
		return 3
	}
	return 4 // method.FGNMatrixFree
}

// EstimateMemory estimates the peak memory of a run of c (its method, model and batch size) on
// n training and nEval held-out examples of dimension dim with the given number of classes.
func EstimateMemory(c Config, n, nEval, dim, classes int) MemoryEstimate {
	const f32 = 4
	N, E, d, C, H := int64(n), int64(nEval), int64(dim), int64(classes), int64(c.Model.Hidden)
	b := min(int64(c.BatchSize), N)
	var e MemoryEstimate
	e.Data = f32 * (2*(N+E)*d + N*d) // loaded, the evaluator's copy, the static batches
	params := d*C + C
	if H > 0 {
		params = d*H + H + H*C + C
	}
	e.State = f32 * stateMultiple(c.Method) * params
	if H > 0 {
		e.State += f32 * 2 * params
	} else {
		e.Data += f32 * N * d // hᵀ of every batch
		if c.Method == method.FGN {
			e.Data += f32 * ((N + b - 1) / b) * b * b // the feature Gram of every batch
		}
	}
	e.Step = f32*stepTemporaries*b*(C+H) + kernelBuffers
	e.Evaluation = max(N, E)*(f32*evalTemporaries*(C+H)+C) + f32*params
	return e
}

// CheckMemory returns an error when the estimated peak of a run of c on n training and nEval
// held-out examples of dimension dim and the given number of classes (EstimateMemory) exceeds
// the memory available on this machine (AvailableMemory), naming the estimate, its parts and
// what is available; nil when it fits or when the available memory cannot be read.
func CheckMemory(c Config, n, nEval, dim, classes int) error {
	available, ok := AvailableMemory()
	if !ok {
		return nil
	}
	return checkMemory(c, n, nEval, dim, classes, available)
}

func checkMemory(c Config, n, nEval, dim, classes int, available int64) error {
	e := EstimateMemory(c, n, nEval, dim, classes)
	if e.Total() <= available {
		return nil
	}
	gib := func(x int64) string { return strconv.FormatFloat(float64(x)/(1<<30), 'f', 2, 64) }
	return fmt.Errorf("%s with a %s model, batch %d, on %d training and %d held-out examples (d=%d, C=%d) needs "+
		"an estimated %s GiB (data %s, parameters and optimiser state %s, step temporaries %s, evaluation %s), "+
		"more than the %s GiB available on this machine (MemAvailable in /proc/meminfo): use fewer classes, a "+
		"smaller batch or fewer examples, or a machine with more memory",
		c.Method.Label(), c.Model, c.BatchSize, n, nEval, dim, classes, gib(e.Total()), gib(e.Data), gib(e.State),
		gib(e.Step), gib(e.Evaluation), gib(available))
}

// AvailableMemory returns the memory available for starting new applications without
// swapping (MemAvailable in /proc/meminfo), in bytes, and false where that cannot be read (not
// Linux).
func AvailableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return memAvailable(f)
}

// memAvailable parses the MemAvailable line ("MemAvailable:   123456 kB") of a /proc/meminfo.
func memAvailable(r io.Reader) (int64, bool) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 3 && fields[0] == "MemAvailable:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil && kb >= 0
		}
	}
	return 0, false
}
