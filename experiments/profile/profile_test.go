package profile

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestNamed(t *testing.T) {
	for _, name := range Names {
		p, err := Named(name)
		if err != nil || p.Profile != name || p.StepTime.Profile != name || p.Headopt.Name != name {
			t.Errorf("Named(%q) = profiles %q/%q/%q, %v", name, p.Profile, p.StepTime.Profile, p.Headopt.Name, err)
		}
	}
	if _, err := Named("huge"); err == nil || !strings.Contains(err.Error(), `unknown profile "huge"`) {
		t.Errorf("Named(huge): error %v, want one naming the profile", err)
	}
}

// TestCheapestFirst checks the order Names promises: each profile times no more steps and trains
// no more seeds and epochs than the next.
func TestCheapestFirst(t *testing.T) {
	for i := 1; i < len(Names); i++ {
		a, _ := Named(Names[i-1])
		b, _ := Named(Names[i])
		if a.StepTime.Steps > b.StepTime.Steps || len(a.StepTime.Classes) > len(b.StepTime.Classes) ||
			a.Headopt.Seeds > b.Headopt.Seeds || a.Headopt.Epochs > b.Headopt.Epochs {
			t.Errorf("%s is not cheaper than %s: panel (a) %d steps at %d C, sweep %d seeds × %d epochs against %d, %d, %d × %d",
				a.Profile, b.Profile, a.StepTime.Steps, len(a.StepTime.Classes), a.Headopt.Seeds, a.Headopt.Epochs,
				b.StepTime.Steps, len(b.StepTime.Classes), b.Headopt.Seeds, b.Headopt.Epochs)
		}
	}
}

// TestFresh checks that a plan's slices are its own: changing one leaves the next plan as it was.
func TestFresh(t *testing.T) {
	a, _ := Named("quick")
	a.StepTime.Classes[0], a.StepTime.Methods[0], a.Headopt.SynthThresholds[0], a.Agreement.Scales[0] = -1, "x", -1, -1
	b, _ := Named("quick")
	if b.StepTime.Classes[0] == -1 || b.StepTime.Methods[0] == "x" || b.Headopt.SynthThresholds[0] == -1 || b.Agreement.Scales[0] == -1 {
		t.Errorf("a plan shares its slices with the next one: %v %v %v %v", b.StepTime.Classes, b.StepTime.Methods,
			b.Headopt.SynthThresholds, b.Agreement.Scales)
	}
}

// TestArtifactProfiles checks that artifact.yaml's profiles are these.
func TestArtifactProfiles(t *testing.T) {
	data, err := os.ReadFile("../../artifact.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Profiles map[string]any `yaml:"profiles"`
	}
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range manifest.Profiles {
		got = append(got, name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(Names))
	if !slices.Equal(got, want) {
		t.Errorf("artifact.yaml has profiles %v, package profile %v", got, want)
	}
}
