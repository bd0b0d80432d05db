package zoo

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/fgn"
)

// Names of the optimizers at their library defaults.
const (
	FGNDefault = "FGN()"
	SGNDefault = "SGN()"
)

// GN returns the FGN or SGN optimizer named name that config configures: config is called for
// each run, so it returns a fresh configuration (fgn.FGN() or fgn.SGN() and its setters).
func GN(name string, config func() *fgn.GNConfig) Optimizer {
	return Optimizer{Name: name, New: func() optimizer.Interface { return config().Done() }}
}

// AdamRates is the learning-rate grid of tuned Adam: GoMLX's default 0.001 and three larger
// rates, GoMLX's Adam otherwise at its defaults. Tuned Adam on a model is the rate of the best
// mean held-out accuracy after the model's epoch budget (TunedAdam).
var AdamRates = []float64{0.001, 0.003, 0.01, 0.03}

// adamPrefix begins the names of Adam's candidates, "Adam lr=<rate>".
const adamPrefix = "Adam lr="

// Adam returns GoMLX's Adam at learning rate lr.
func Adam(lr float64) Optimizer {
	return Optimizer{Name: adamPrefix + num(lr), New: func() optimizer.Interface {
		return optimizer.Adam().LearningRate(lr).Done()
	}}
}

// Candidates are the optimizers the sweep knows by name: FGN and SGN at their defaults
// (fgn.FGN().Done(), fgn.SGN().Done()), FGN and SGN started from α = 1, λ = 0.1 with
// fgn.LevenbergMarquardt() (their other settings the defaults), the ablations of the defaults
// (ablations) and Adam at each of AdamRates. A setting under study joins them as a GN
// constructor.
var Candidates = append([]Optimizer{
	GN(FGNDefault, fgn.FGN),
	GN(SGNDefault, fgn.SGN),
	GN("FGN α=1 λ=0.1 lm", func() *fgn.GNConfig {
		return fgn.FGN().LearningRate(1).Damping(0.1).DampingPolicy(fgn.LevenbergMarquardt())
	}),
	GN("SGN α=1 λ=0.1 lm", func() *fgn.GNConfig {
		return fgn.SGN().LearningRate(1).Damping(0.1).DampingPolicy(fgn.LevenbergMarquardt())
	}),
}, append(ablations(), adamGrid()...)...)

// ablations are the defaults with one choice undone: FGN and SGN with Levenberg-Marquardt damping
// without its noise floor ("floor×0", LMDamping.NoiseFloor 0); FGN with λI damping ("λI",
// Settings.ScaledDamping off), with the floor's ν estimated along the batch gradient ("ν along
// ĝ", LMDamping.WholeVariance off), from each batch's estimates alone ("ν per batch",
// LMDamping.NoiseAverage 0), with the floor μ·min(ν, 1) ("floor p=1", LMDamping.FloorExponent 1),
// and stepping its direction at full length ("τ=1", Settings.GGNStepLength off).
func ablations() []Optimizer {
	lm := func(change func(*fgn.LMDamping)) fgn.LMDamping {
		p := fgn.LevenbergMarquardt()
		change(&p)
		return p
	}
	var opts []Optimizer
	for _, method := range []struct {
		name string
		new  func() *fgn.GNConfig
	}{{"FGN", fgn.FGN}, {"SGN", fgn.SGN}} {
		opts = append(opts, GN(method.name+" floor×0", func() *fgn.GNConfig {
			return method.new().DampingPolicy(lm(func(p *fgn.LMDamping) { p.NoiseFloor = 0 }))
		}))
	}
	return append(opts,
		GN("FGN λI", func() *fgn.GNConfig { return fgn.FGN().ScaledDamping(false) }),
		GN("FGN ν along ĝ", func() *fgn.GNConfig {
			return fgn.FGN().DampingPolicy(lm(func(p *fgn.LMDamping) { p.WholeVariance = false }))
		}),
		GN("FGN ν per batch", func() *fgn.GNConfig {
			return fgn.FGN().DampingPolicy(lm(func(p *fgn.LMDamping) { p.NoiseAverage = 0 }))
		}),
		GN("FGN floor p=1", func() *fgn.GNConfig {
			return fgn.FGN().DampingPolicy(lm(func(p *fgn.LMDamping) { p.FloorExponent = 1 }))
		}),
		GN("FGN τ=1", func() *fgn.GNConfig { return fgn.FGN().GGNStepLength(false) }))
}

// Alternatives are settings tried against the defaults that the defaults leave off (the sweep's
// -alternatives adds them to the candidates): FGN and SGN stepping along the exponential average
// of their steps ("β=0.9", Settings.Momentum 0.9), FGN with the damping metric per entry ("per
// entry", Settings.ScaledDampingPerEntry), FGN and SGN with both, the noise floor's scale κ
// (LMDamping.NoiseFloor) below and above the defaults' 1 ("κ=0.5"), and FGN with fewer CG
// iterations than the defaults' 5, cheaper steps ("CG≤2", CGSettings.MaxIterations 2).
var Alternatives = []Optimizer{
	GN("FGN β=0.9", func() *fgn.GNConfig { return fgn.FGN().Momentum(0.9) }),
	GN("SGN β=0.9", func() *fgn.GNConfig { return fgn.SGN().Momentum(0.9) }),
	GN("FGN per entry", func() *fgn.GNConfig { return fgn.FGN().ScaledDampingPerEntry(true) }),
	GN("FGN β=0.9 per entry", func() *fgn.GNConfig { return fgn.FGN().Momentum(0.9).ScaledDampingPerEntry(true) }),
	GN("SGN β=0.9 per entry", func() *fgn.GNConfig { return fgn.SGN().Momentum(0.9).ScaledDampingPerEntry(true) }),
	GN("FGN κ=0.25", func() *fgn.GNConfig { return fgn.FGN().DampingPolicy(noiseFloor(0.25)) }),
	GN("FGN κ=0.5", func() *fgn.GNConfig { return fgn.FGN().DampingPolicy(noiseFloor(0.5)) }),
	GN("SGN κ=0.5", func() *fgn.GNConfig { return fgn.SGN().DampingPolicy(noiseFloor(0.5)) }),
	GN("FGN κ=2", func() *fgn.GNConfig { return fgn.FGN().DampingPolicy(noiseFloor(2)) }),
	GN("FGN CG≤2", func() *fgn.GNConfig { return fgn.FGN().CGMaxIterations(2) }),
	GN("FGN CG≤3", func() *fgn.GNConfig { return fgn.FGN().CGMaxIterations(3) }),
}

// noiseFloor returns fgn.LevenbergMarquardt() with the noise floor's scale κ.
func noiseFloor(kappa float64) fgn.LMDamping {
	p := fgn.LevenbergMarquardt()
	p.NoiseFloor = kappa
	return p
}

// Grid returns FGN and SGN at every combination of step size α, initial damping λ, damping
// policy and CG cap, their other settings those of fgn.FGN() and fgn.SGN(), named
// "FGN α=0.3 λ=0.1 lm CG≤5".
func Grid(alphas, lambdas []float64, policies []fgn.DampingPolicy, cgCaps []int) []Optimizer {
	var opts []Optimizer
	for _, method := range []struct {
		name string
		new  func() *fgn.GNConfig
	}{{"FGN", fgn.FGN}, {"SGN", fgn.SGN}} {
		for _, policy := range policies {
			for _, cg := range cgCaps {
				for _, alpha := range alphas {
					for _, lambda := range lambdas {
						opts = append(opts, GN(fmt.Sprintf("%s α=%s λ=%s %s CG≤%d", method.name, num(alpha), num(lambda), policy, cg),
							func() *fgn.GNConfig {
								return method.new().LearningRate(alpha).Damping(lambda).DampingPolicy(policy).CGMaxIterations(cg)
							}))
					}
				}
			}
		}
	}
	return opts
}

// DefaultGrid is the grid from which FGN's and SGN's defaults were chosen on the digits MLPs
// (BENCHMARKS.md): α ∈ {0.1, 0.3, 1}, λ ∈ {0.1, 1, 10}, constant and Levenberg-Marquardt damping,
// at most 5 or 10 CG iterations.
var DefaultGrid = Grid([]float64{0.1, 0.3, 1}, []float64{0.1, 1, 10},
	[]fgn.DampingPolicy{fgn.ConstantDamping{}, fgn.LevenbergMarquardt()}, []int{5, 10})

func adamGrid() []Optimizer {
	var opts []Optimizer
	for _, lr := range AdamRates {
		opts = append(opts, Adam(lr))
	}
	return opts
}

// SelectOptimizers returns the candidates whose names match one of the comma-separated patterns
// (path.Match syntax: "FGN*" is every FGN, "Adam*" Adam's grid), in the order of candidates.
func SelectOptimizers(candidates []Optimizer, patterns string) ([]Optimizer, error) {
	var chosen []Optimizer
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		found := false
		for _, o := range candidates {
			ok, err := path.Match(p, o.Name)
			if err != nil {
				return nil, fmt.Errorf("zoo: optimizer pattern %q: %w", p, err)
			}
			found = found || ok
		}
		if !found {
			return nil, fmt.Errorf("zoo: no optimizer matches %q (the candidates: %s)", p, names(candidates))
		}
	}
	for _, o := range candidates {
		for _, p := range strings.Split(patterns, ",") {
			if ok, _ := path.Match(strings.TrimSpace(p), o.Name); ok {
				chosen = append(chosen, o)
				break
			}
		}
	}
	return chosen, nil
}

// SelectModels returns the models of Models and KANModels named in the comma-separated list
// names, in the zoo's order.
func SelectModels(list string) ([]Model, error) {
	var chosen []Model
	for _, name := range strings.Split(list, ",") {
		if _, err := ModelByName(strings.TrimSpace(name)); err != nil {
			return nil, err
		}
	}
	for _, m := range slices.Concat(Models, KANModels) {
		for _, name := range strings.Split(list, ",") {
			if strings.TrimSpace(name) == m.Name {
				chosen = append(chosen, m)
				break
			}
		}
	}
	return chosen, nil
}

// names lists the optimizers' names, quoted.
func names(opts []Optimizer) string {
	q := make([]string, len(opts))
	for k, o := range opts {
		q[k] = strconv.Quote(o.Name)
	}
	return strings.Join(q, ", ")
}

// num formats a setting in names: the shortest form that round-trips.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
