// Package artifact reads the artifact-evaluation manifest (artifact.yaml at the repository
// root) and verifies its claims: each claim names the command that checks it, the output that
// command produces (a CSV file of package experiments/report, or the test2json events of a
// "go test -json" run), the expected value and its tolerance (a test asserts its own).
//
// [Parse] is strict: an unknown field, a CSV claim without a tolerance, or a command that is not a
// known fgn subcommand or a "go test <pkg> -run <regexp> -json" invocation is an error naming the
// line of artifact.yaml. [Verify] runs the claims and returns one [Result] per claim.
package artifact

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fgn-paper/fgn/features"
)

// Artifact is the whole manifest.
type Artifact struct {
	Paper       Paper              `yaml:"paper"`
	Environment Environment        `yaml:"environment"`
	Profiles    map[string]Profile `yaml:"profiles"`
	Data        []Dataset          `yaml:"data"`
	Claims      []Claim            `yaml:"claims"`
}

// Paper identifies the paper the artifact reproduces: its title, authors and a public identifier
// (an arXiv number or a DOI) with its address.
type Paper struct {
	Title      string   `yaml:"title"`
	Authors    []string `yaml:"authors"`
	Identifier string   `yaml:"identifier"`
	URL        string   `yaml:"url"`
	Note       string   `yaml:"note"`
}

// Environment records the software the results were produced with.
type Environment struct {
	Go       string            `yaml:"go"`
	Modules  map[string]string `yaml:"modules"`
	Tools    map[string]string `yaml:"tools"`
	Backends []Backend         `yaml:"backends"`
	Build    string            `yaml:"build"`
	Note     string            `yaml:"note"`
}

// Backend is one GoMLX backend the artifact runs on.
type Backend struct {
	Name       string `yaml:"name"`
	Env        string `yaml:"env"`
	PJRTPlugin string `yaml:"pjrt_plugin"`
	Note       string `yaml:"note"`
}

// Profile is a verification profile (quick, full, ...): the hardware it is meant for and what
// it costs.
type Profile struct {
	Hardware    string `yaml:"hardware"`
	Description string `yaml:"description"`
}

// Dataset is an input that some claims need. It is present when every file of Files exists
// under Path (relative to the directory of artifact.yaml) and, when Identity is set, the
// feature-cache manifest there (features.Manifest) identifies it.
type Dataset struct {
	Name     string    `yaml:"name"`
	Source   string    `yaml:"source"`
	Make     string    `yaml:"make"`
	Path     string    `yaml:"path"`
	Files    []string  `yaml:"files"`
	Identity *Identity `yaml:"identity"`
	Size     string    `yaml:"size"`
	SHA256   string    `yaml:"sha256"`
	Note     string    `yaml:"note"`
}

// Identity is what a feature cache's manifest must record for the cache to be the data set the
// claims were made on: the examples of every split, the class count and the encoder weights'
// name (features.ManifestWeights.Name, which data/fetch qualifies when the weight file is not
// identified by its name).
type Identity struct {
	Splits  map[string]int `yaml:"splits"`
	Classes int            `yaml:"classes"`
	Weights string         `yaml:"weights"`
}

// check reads the manifest of the feature cache in dir and returns an error naming the first
// field that differs from id.
func (id *Identity) check(dir string) error {
	m, err := features.ReadManifest(dir)
	if err != nil {
		return err
	}
	for _, split := range slices.Sorted(maps.Keys(id.Splits)) {
		got, ok := m.Splits[split]
		switch {
		case !ok:
			return fmt.Errorf("%s is not the canonical cache: its manifest has no %s split", dir, split)
		case got.Examples != id.Splits[split]:
			return fmt.Errorf("%s is not the canonical cache: its %s split has %d examples (want %d)", dir, split, got.Examples, id.Splits[split])
		case got.Classes != id.Classes:
			return fmt.Errorf("%s is not the canonical cache: its %s split has %d classes (want %d)", dir, split, got.Classes, id.Classes)
		}
	}
	if m.Weights.Name != id.Weights {
		return fmt.Errorf("%s is not the canonical cache: its features come from weights %q (want %q)", dir, m.Weights.Name, id.Weights)
	}
	return nil
}

// Claim is one checked statement of the paper.
//
// Requires names the data sets the claim needs; Profiles, when set, the only profiles in which
// it is checked (timing claims: a smoke run's few steps on a shared CI machine measure noise, not
// the paper's cost model). Otherwise the claim is reported as not run, with the reason.
//
// Output is either GoTest (the claim's command is a go test run with -json; the claim passes
// when the tests it names pass; Expected is "pass" and there is no tolerance) or the name of a
// CSV file the command writes under the output directory, from which Measure selects the values
// compared with Expected.
type Claim struct {
	ID        string            `yaml:"id"`
	Reference string            `yaml:"reference"`
	Statement string            `yaml:"statement"`
	Command   string            `yaml:"command"`
	Requires  []string          `yaml:"requires"`
	Profiles  []string          `yaml:"profiles"`
	Output    string            `yaml:"output"`
	Measure   Measure           `yaml:"measure"`
	Expected  string            `yaml:"expected"`
	Tolerance *Tolerance        `yaml:"tolerance"`
	Time      map[string]string `yaml:"time"`
	Note      string            `yaml:"note"`

	line int // line of the claim in artifact.yaml
}

// NotReached is the Expected value of a CSV claim stating that a threshold is not reached (the
// "–" cells of the paper's Table 1): it passes when every selected value is NaN, the CSV files'
// marker for "not reached within the horizon". It takes no tolerance.
const NotReached = "not reached"

// Measure selects values from a CSV output.
//
//   - Column is the measured column; when Minus is set the measured value of a row is
//     Column − Minus.
//   - Where keeps the rows whose cell in the named column equals the given value; the values
//     "max" and "min" keep the rows holding that column's largest or smallest number.
//   - Group names the column whose values the ordering in Expected refers to (orderings only);
//     each group must have exactly one selected row, unless Repeated.
//   - Repeated marks a timing claim: the selected rows (of each group) are repeated measurements
//     of one quantity, and the claim is decided by the bootstrap rule of timing.go as pass,
//     fail or Inconclusive. A repeated ordering takes no tolerance (the interval is its
//     margin); a repeated number needs one (the band its median must lie in).
type Measure struct {
	Column   string            `yaml:"column"`
	Minus    string            `yaml:"minus"`
	Where    map[string]string `yaml:"where"`
	Group    string            `yaml:"group"`
	Repeated bool              `yaml:"repeated"`
}

// Tolerance is an absolute and/or relative tolerance (nil only for NotReached claims and
// repeated orderings). A value v matches the expected e when
// |v − e| ≤ Absolute + Relative·|e|. In an ordering "a < b", the same slack applies to b:
// the ordering holds when v_a < v_b + Absolute + Relative·|v_b|.
type Tolerance struct {
	Absolute *float64 `yaml:"absolute"`
	Relative *float64 `yaml:"relative"`
}

// slack returns the allowed deviation around x.
func (t *Tolerance) slack(x float64) float64 {
	s := 0.0
	if t.Absolute != nil {
		s += *t.Absolute
	}
	if t.Relative != nil {
		s += *t.Relative * abs(x)
	}
	return s
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
