package fgn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/internal/ref"
)

// headCase is a classifier written with GoMLX's layers: features (the input, or a backbone over
// it) and a dense head over them.
type headCase struct {
	name string
	// d is the feature width the head sees, c the number of classes.
	d, c int
	// vars are the model's variables (path → shape), created beforehand with random values so
	// that every run starts from the same point; frozen lists those not trainable.
	vars   map[string][]int
	frozen []string
	// features maps the input x (b×dIn) to the head's features h; head builds the logits from h.
	features func(scope *model.Scope, x *Node) *Node
	head     func(scope *model.Scope, h *Node) *Node
	// layout and bias describe the head for its closed form NewDenseHead (positive cases only).
	layout compute.DenseLayout
	bias   bool
}

const (
	headB, headDIn, headC, headHidden = 12, 6, 4, 7
)

// varValue returns the current value in g of the model variable at path.
func varValue(scope *model.Scope, g *Graph, path string) *Node {
	return scope.Store().GetVariable(path).NodeValue(g)
}

func inputFeatures(_ *model.Scope, x *Node) *Node { return x }

func tanhLayer(scope *model.Scope, x *Node) *Node {
	return Tanh(layers.DenseWithBias(scope.In("backbone"), x, headHidden))
}

func denseHead(layout compute.DenseLayout, bias bool) func(scope *model.Scope, h *Node) *Node {
	return func(scope *model.Scope, h *Node) *Node { return layers.DenseWithLayout(scope, h, layout, bias, headC) }
}

func headVars(d int, layout compute.DenseLayout, bias bool) map[string][]int {
	w := []int{d, headC}
	if layout == compute.DenseLayoutOutputsInput {
		w = []int{headC, d}
	}
	vars := map[string][]int{"/dense/weights": w}
	if bias {
		vars["/dense/biases"] = []int{headC}
	}
	return vars
}

func withBackbone(vars map[string][]int) map[string][]int {
	vars["/backbone/dense/weights"] = []int{headDIn, headHidden}
	vars["/backbone/dense/biases"] = []int{headHidden}
	return vars
}

// affineHeadCases are the models that are affine in their trainable parameters.
func affineHeadCases() []headCase {
	in, out := compute.DenseLayoutInputOutputs, compute.DenseLayoutOutputsInput
	return []headCase{
		{name: "DenseWithBias on the input", d: headDIn, c: headC, vars: headVars(headDIn, in, true),
			features: inputFeatures, head: denseHead(in, true), layout: in, bias: true},
		{name: "Dense without bias on the input", d: headDIn, c: headC, vars: headVars(headDIn, in, false),
			features: inputFeatures, head: denseHead(in, false), layout: in},
		{name: "DenseWithBias OutputsInput", d: headDIn, c: headC, vars: headVars(headDIn, out, true),
			features: inputFeatures, head: denseHead(out, true), layout: out, bias: true},
		{name: "Dense without bias OutputsInput", d: headDIn, c: headC, vars: headVars(headDIn, out, false),
			features: inputFeatures, head: denseHead(out, false), layout: out},
		{name: "MatMul and Add", d: headDIn, c: headC, vars: headVars(headDIn, in, true),
			features: inputFeatures, head: func(scope *model.Scope, h *Node) *Node {
				g := h.Graph()
				w, b := varValue(scope, g, "/dense/weights"), varValue(scope, g, "/dense/biases")
				return Add(MatMul(h, w), ExpandAxes(b, 0))
			}, layout: in, bias: true},
		{name: "head over a frozen backbone", d: headHidden, c: headC, vars: withBackbone(headVars(headHidden, in, true)),
			frozen:   []string{"/backbone/dense/weights", "/backbone/dense/biases"},
			features: tanhLayer, head: denseHead(in, true), layout: in, bias: true},
		{name: "head behind StopGradient", d: headHidden, c: headC, vars: withBackbone(headVars(headHidden, in, true)),
			features: func(scope *model.Scope, x *Node) *Node { return StopGradient(tanhLayer(scope, x)) },
			head:     denseHead(in, true), layout: in, bias: true},
	}
}

// denseWithActivation is nn.Dense with an activation, which the Go backend fuses into its Dense
// op when the activation's VJP needs only the output.
func denseWithActivation(act activation.Type) func(scope *model.Scope, h *Node) *Node {
	return func(scope *model.Scope, h *Node) *Node {
		g := h.Graph()
		w, b := varValue(scope, g, "/dense/weights"), varValue(scope, g, "/dense/biases")
		return nn.Dense(h, w, b, compute.DenseLayoutInputOutputs, act)
	}
}

// notAffineCases are models that are not affine in their trainable parameters.
func notAffineCases() []headCase {
	in := compute.DenseLayoutInputOutputs
	return []headCase{
		{name: "head over a trainable layer", vars: withBackbone(headVars(headHidden, in, true)),
			features: tanhLayer, head: denseHead(in, true)},
		{name: "head whose W is shared with an earlier layer", vars: map[string][]int{"/W": {headDIn, headDIn}, "/bias": {headDIn}},
			features: func(scope *model.Scope, x *Node) *Node {
				return Tanh(MatMul(x, varValue(scope, x.Graph(), "/W")))
			},
			head: func(scope *model.Scope, h *Node) *Node {
				g := h.Graph()
				return Add(MatMul(h, varValue(scope, g, "/W")), ExpandAxes(varValue(scope, g, "/bias"), 0))
			}},
		{name: "features scaled by a trainable temperature", vars: map[string][]int{"/dense/weights": {headDIn, headC},
			"/dense/biases": {headC}, "/temperature": {}},
			features: func(scope *model.Scope, x *Node) *Node {
				return Mul(x, varValue(scope, x.Graph(), "/temperature"))
			},
			head: denseHead(in, true)},
		{name: "dense head with a ReLU", vars: headVars(headDIn, in, true), features: inputFeatures,
			head: denseWithActivation(activation.TypeRelu)},
		{name: "dense head with a tanh", vars: headVars(headDIn, in, true), features: inputFeatures,
			head: denseWithActivation(activation.TypeTanh)},
		{name: "logits times a trainable scale", vars: map[string][]int{"/dense/weights": {headDIn, headC},
			"/dense/biases": {headC}, "/scale": {}}, features: inputFeatures,
			head: func(scope *model.Scope, h *Node) *Node {
				return Mul(denseHead(in, true)(scope, h), varValue(scope, h.Graph(), "/scale"))
			}},
	}
}

// linearizationMode selects how the Trainer's model function offers its logits to the optimizer.
type linearizationMode int

const (
	recognised linearizationMode = iota // nothing recorded: the optimizer chooses
	autodiff                            // Linearize of the logits recorded
	closedForm                          // NewDenseHead built by the model and recorded
)

// kindSpy is an FGN or SGN optimizer that reports the linearisation its UpdateGraph chose.
type kindSpy struct {
	*gnOptimizer
	kind string
}

func (s *kindSpy) UpdateGraph(scope *model.Scope, g *Graph, loss *Node) {
	_, s.kind = s.linearization(scope, g, recordOf(g))
	s.gnOptimizer.UpdateGraph(scope, g, loss)
}

// headRun is one Trainer step on a headCase: its direction (w⁺ − w)/α by trainable variable, and
// the linearisation the optimizer chose.
type headRun struct {
	dir  map[string][]float64
	kind string
	err  error
}

// flat returns the direction over the given variables, in their order.
func (r headRun) flat(paths []string) []float64 {
	var out []float64
	for _, p := range paths {
		out = append(out, r.dir[p]...)
	}
	return out
}

// isBackbone reports whether a variable path is the backbone's.
func isBackbone(path string) bool { return strings.HasPrefix(path, "/backbone/") }

func runHeadCase(t *testing.T, tc headCase, cfg *GNConfig, mode linearizationMode, dtype dtypes.DType) headRun {
	t.Helper()
	const alpha = 0.5
	rng := rand.New(rand.NewPCG(41, 3))
	store := model.NewStore()
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range tc.vars {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		dims := tc.vars[p]
		size := 1
		for _, n := range dims {
			size *= n
		}
		values := make([]float64, size)
		for k := range values {
			values[k] = rng.NormFloat64()
		}
		value := tensors.FromFlatDataAndDimensions(values, dims...)
		if dtype == dtypes.Float32 {
			value = tensors.FromFlatDataAndDimensions(cast(values, dtype).([]float32), dims...)
		}
		dir, name := p[:strings.LastIndex(p, "/")+1], p[strings.LastIndex(p, "/")+1:]
		v := store.Scope(dir).VariableWithValue(name, value)
		// A closed form recorded by the model must list every trainable variable: the backbone
		// behind a StopGradient is frozen for it.
		v.SetTrainable(!slices.Contains(tc.frozen, p) && !(mode == closedForm && isBackbone(p)))
	}
	x := ref.RandMatrix(rng, headB, headDIn, 1)
	labels := ref.RandLabels(rng, headB, headC)

	modelFn := func(scope *model.Scope, x *Node) *Node {
		h := tc.features(scope, x)
		if mode == closedForm {
			g := x.Graph()
			w := varValue(scope, g, "/dense/weights")
			var bias *Node
			if tc.bias {
				bias = varValue(scope, g, "/dense/biases")
			}
			head := NewDenseHead(h, w, bias, tc.layout)
			RecordLinearization(head)
			return head.Logits()
		}
		logits := tc.head(scope, h)
		if mode == autodiff {
			_, params := trainableVariables(scope, x.Graph())
			RecordLinearization(Linearize(logits, params))
		}
		return logits
	}
	spy := &kindSpy{gnOptimizer: cfg.LearningRate(alpha).Done().(*gnOptimizer)}
	trainer := train.NewTrainer(testBackend, store, modelFn, Loss, spy, nil, nil)
	before := map[string][]float64{}
	for _, p := range paths {
		before[p] = flat64(store.GetVariable(p).MustValue())
	}
	xt := tensors.FromValue(x)
	if dtype == dtypes.Float32 {
		xt = tensors.FromValue(cast(x, dtype).([][]float32))
	}
	batch := train.Batch{Inputs: []*tensors.Tensor{xt},
		Labels: []*tensors.Tensor{tensors.FromValue(labels)}}
	run := headRun{dir: map[string][]float64{}}
	if _, run.err = trainer.TrainStep(batch); run.err != nil {
		run.kind = spy.kind
		return run
	}
	run.kind = spy.kind
	for _, p := range paths {
		for k, after := range flat64(store.GetVariable(p).MustValue()) {
			run.dir[p] = append(run.dir[p], (after-before[p][k])/alpha)
		}
	}
	return run
}

// TestRecogniseAffineHead checks that on a Trainer model affine in its trainable parameters
// (layers.Dense and DenseWithBias in either weight layout, fused or decomposed; over the input
// features, a frozen backbone or a StopGradient) FGN and SGN recognise the affine head, and that
// their step equals the autodiff path's to 1e-10 in float64 and the recorded closed form's
// (NewDenseHead) to float32 rounding.
func TestRecogniseAffineHead(t *testing.T) {
	for _, fused := range []bool{true, false} {
		for _, tc := range affineHeadCases() {
			for _, opt := range []struct {
				name string
				cfg  func() *GNConfig
			}{
				{"FGN", FGN}, {"SGN", SGN},
				{"FGN LM", func() *GNConfig { return FGN().Damping(1).DampingPolicy(LevenbergMarquardt()) }},
			} {
				cfg := opt.cfg
				name := tc.name + "/" + opt.name
				if !fused {
					name += "/GOMLX_FUSION=false"
				}
				t.Run(name, func(t *testing.T) {
					if !fused {
						t.Setenv(FusionEnv, "false")
					}
					got := runHeadCase(t, tc, cfg(), recognised, dtypes.Float64)
					got32 := runHeadCase(t, tc, cfg(), recognised, dtypes.Float32)
					want32 := runHeadCase(t, tc, cfg(), closedForm, dtypes.Float32)
					for _, r := range []headRun{got, got32} {
						if r.err != nil || r.kind != ExactProducts {
							t.Fatalf("linearisation %q (error %v), want %q", r.kind, r.err, ExactProducts)
						}
					}
					if want32.err != nil || want32.kind != Recorded {
						t.Fatalf("recorded closed form: linearisation %q (error %v)", want32.kind, want32.err)
					}
					want := runHeadCase(t, tc, cfg(), autodiff, dtypes.Float64)
					if want.err != nil || want.kind != Recorded {
						t.Fatalf("autodiff reference: linearisation %q (error %v)", want.kind, want.err)
					}
					var all, head []string
					for p := range tc.vars {
						if !slices.Contains(tc.frozen, p) {
							all = append(all, p)
						}
						if !isBackbone(p) {
							head = append(head, p)
						}
					}
					slices.Sort(all)
					slices.Sort(head)
					if ref.MaxAbs(want.flat(head)) == 0 || ref.MaxAbs(want32.flat(head)) == 0 {
						t.Fatalf("a reference step did not move the head: %v, %v", want.dir, want32.dir)
					}
					check(t, "float64 direction vs autodiff's", ref.RelErr(got.flat(all), want.flat(all)), 1e-10)
					check(t, "float32 direction vs the recorded closed form's", ref.RelErr(got32.flat(head), want32.flat(head)), 1e-5)
					for _, p := range all {
						if isBackbone(p) && ref.MaxAbs(got.dir[p]) != 0 {
							t.Errorf("%s behind the StopGradient moved by %v, want 0", p, got.dir[p])
						}
					}
				})
			}
		}
	}
}

// TestNotAffineHead checks that a model that is not affine in its trainable parameters is never
// taken for an affine head: the optimizer linearises it by autodiff.
func TestNotAffineHead(t *testing.T) {
	for _, fused := range []bool{true, false} {
		for _, tc := range notAffineCases() {
			name := tc.name
			if !fused {
				name += "/GOMLX_FUSION=false"
			}
			t.Run(name, func(t *testing.T) {
				if !fused {
					t.Setenv(FusionEnv, "false")
				}
				got := runHeadCase(t, tc, FGN(), recognised, dtypes.Float64)
				if got.kind != Autodiff {
					t.Errorf("linearisation %q, want %q", got.kind, Autodiff)
				}
				if got.err != nil {
					t.Errorf("autodiff step: %v", got.err)
				}
			})
		}
	}
}
