package headopt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
)

// TestReadSelectionFormat checks that ReadSelection rejects a key the selection format does not
// have, in a file of either format before method.Hyper (testdata/selection_old_format.json,
// and fgn.Settings at the top level of each choice) or of today's, with an error naming the file, the key, the format change and the remedy; that a
// malformed file is not blamed on the format; and that a file of today's format is read.
func TestReadSelectionFormat(t *testing.T) {
	const tag = "synthetic-cars196-shape"
	methods := []method.Method{method.Adam, method.SGN, method.FGN}
	current := func(fgnCG string) string {
		return `{"data_tag": "` + tag + `", "chosen": {
  "adam": {"adam": {"learning_rate": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-07}},
  "sgn": {"gn": {"learning_rate": 0.1, "damping": 1, "cg": {"max_iterations": 5, "tolerance": 1e-05, "stopping_rule": "parameter"}, "row_operator": "closed-form-gram", "warm_start": true}},
  "fgn": {"gn": {"learning_rate": 0.1, "damping": 1, "cg": {` + fgnCG + `}, "row_operator": "closed-form-gram", "warm_start": false}}}}`
	}
	settingsFormat := `{"data_tag": "` + tag + `", "chosen": {
  "adam": {"learning_rate": 0.001, "damping": 1, "cg": {"max_iterations": 5, "tolerance": 1e-05, "stopping_rule": "parameter"}, "row_operator": "closed-form-gram", "warm_start": false}}}`
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	formatChanged := []string{"selection file format, which changed", `rerun "fgn headopt select"`}
	for _, tc := range []struct {
		name    string
		path    string
		want    []string // substrings of the error besides the path; nil: no error
		notWant string
	}{
		{"format before fgn.Settings", "testdata/selection_old_format.json",
			append([]string{`unknown field "alpha"`}, formatChanged...), ""},
		{"format of fgn.Settings choices", write("settings.json", settingsFormat),
			append([]string{`unknown field "learning_rate"`}, formatChanged...), ""},
		{"unknown key in today's format",
			write("extra.json", current(`"max_iterations": 5, "tolerance": 1e-05, "stopping_rule": "whitened-row", "max_iter": 5`)),
			append([]string{`unknown field "max_iter"`}, formatChanged...), ""},
		{"malformed", write("malformed.json", `{"data_tag": "`+tag+`", "chosen": {`), []string{"unexpected end of JSON input"},
			"format"},
		{"today's format", write("current.json", current(`"max_iterations": 5, "tolerance": 1e-05, "stopping_rule": "whitened-row"`)),
			nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chosen, _, err := ReadSelection(tc.path, tag, methods)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got := chosen[method.FGN].GN; got.LearningRate != 0.1 || got.CG.MaxIterations != 5 {
					t.Errorf("FGN's choice read as %+v, want learning rate 0.1 and 5 CG iterations", got)
				}
				if got, want := chosen[method.Adam].Adam, method.GoMLXAdam(0.001); got != want {
					t.Errorf("Adam's choice read as %+v, want %+v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadSelection(%s) succeeded, want an error", tc.path)
			}
			t.Logf("error: %v", err)
			for _, want := range append([]string{tc.path}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q contains %q", err, tc.notWant)
			}
		})
	}
}
