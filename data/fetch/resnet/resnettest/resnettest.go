// Package resnettest makes deterministic torchvision-style ResNet weights for tests: every
// tensor of the state dict is filled by a formula of its name and element index, the same
// formula that data/fetch/resnet/testdata/gen.py uses to compute reference features with
// torchvision.
package resnettest

import (
	"fmt"
	"math"

	"github.com/fgn-paper/fgn/data/fetch/resnet"
)

// StateDictShapes returns the tensor shapes of torchvision's bottleneck ResNet state dict with
// the given blocks per stage and stem width (ResNet-50: [3 4 6 3], 64), including the fc layer
// (1000 classes) and the batch norms' num_batches_tracked scalars.
func StateDictShapes(blocks [4]int, width int) map[string][]int {
	s := map[string][]int{"conv1.weight": {width, 3, 7, 7}}
	bn := func(name string, c int) {
		for _, p := range []string{"weight", "bias", "running_mean", "running_var"} {
			s[name+"."+p] = []int{c}
		}
		s[name+".num_batches_tracked"] = []int{}
	}
	bn("bn1", width)
	in := width
	for stage, n := range blocks {
		planes := width << stage
		out := 4 * planes
		for b := range n {
			p := fmt.Sprintf("layer%d.%d.", stage+1, b)
			s[p+"conv1.weight"] = []int{planes, in, 1, 1}
			bn(p+"bn1", planes)
			s[p+"conv2.weight"] = []int{planes, planes, 3, 3}
			bn(p+"bn2", planes)
			s[p+"conv3.weight"] = []int{out, planes, 1, 1}
			bn(p+"bn3", out)
			if b == 0 {
				s[p+"downsample.0.weight"] = []int{out, in, 1, 1}
				bn(p+"downsample.1", out)
			}
			in = out
		}
	}
	s["fc.weight"] = []int{1000, in}
	s["fc.bias"] = []int{1000}
	return s
}

// nameHash is the name hash of gen.py: h ← (131·h + byte) mod 1000003.
func nameHash(name string) int {
	h := 0
	for _, c := range []byte(name) {
		h = (h*131 + int(c)) % 1000003
	}
	return h
}

// Formula returns element k of the state-dict tensor name with the given shape, with phase
// φ = 2π·hash(name)/1000003:
//
//	running_var            0.8 + 0.2(1 + sin(0.5k + φ))
//	running_mean           0.1 sin(1.1k + φ)
//	num_batches_tracked    0
//	1-d weight (BN scale)  0.6 + 0.3 sin(1.3k + φ)
//	1-d bias               0.1 sin(0.9k + φ)
//	other (conv, fc)       2/√fan_in · sin(0.7k + φ), fan_in = product of shape[1:]
func Formula(name string, shape []int, k int) float64 {
	return formula(name, shape, 2*math.Pi*float64(nameHash(name))/1000003, k)
}

func formula(name string, shape []int, phase float64, k int) float64 {
	x := float64(k)
	has := func(suffix string) bool { return len(name) >= len(suffix) && name[len(name)-len(suffix):] == suffix }
	switch {
	case has("running_var"):
		return 0.8 + 0.2*(1+math.Sin(0.5*x+phase))
	case has("running_mean"):
		return 0.1 * math.Sin(1.1*x+phase)
	case has("num_batches_tracked"):
		return 0
	case len(shape) == 1 && has("weight"):
		return 0.6 + 0.3*math.Sin(1.3*x+phase)
	case len(shape) == 1:
		return 0.1 * math.Sin(0.9*x+phase)
	}
	fanIn := 1
	for _, d := range shape[1:] {
		fanIn *= d
	}
	return 2 / math.Sqrt(float64(fanIn)) * math.Sin(0.7*x+phase)
}

// FormulaWeights returns the state dict of StateDictShapes(blocks, width) filled by Formula.
func FormulaWeights(blocks [4]int, width int) resnet.Weights {
	w := resnet.Weights{}
	for name, shape := range StateDictShapes(blocks, width) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		t := &resnet.Tensor{Shape: shape, Data: make([]float32, n)}
		phase := 2 * math.Pi * float64(nameHash(name)) / 1000003
		for k := range t.Data {
			t.Data[k] = float32(formula(name, shape, phase, k))
		}
		w[name] = t
	}
	return w
}

// Images returns gen.py's n×3×h×w test batch: element i (row-major) is 2 sin(0.37i) + cos(0.011i).
func Images(n, h, w int) []float32 {
	x := make([]float32, n*3*h*w)
	for i := range x {
		x[i] = float32(2*math.Sin(0.37*float64(i)) + math.Cos(0.011*float64(i)))
	}
	return x
}
