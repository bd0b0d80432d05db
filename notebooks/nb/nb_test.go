package nb

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/janpfeifer/gonb/gonbui"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err, tol float64
		fails    bool
	}{
		{"below", 1e-16, 1e-15, false},
		{"equal", 0, 0, false},
		{"above", 2e-15, 1e-15, true},
		{"NaN", math.NaN(), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := -1
			exit = func(c int) { code = c }
			defer func() { exit = os.Exit }()
			Check(tc.name, tc.err, tc.tol)
			if got := code == 1; got != tc.fails {
				t.Errorf("Check(%g, tol %g): exit code %d, want failure %v", tc.err, tc.tol, code, tc.fails)
			}
		})
	}
}

func TestRelErr(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 0},
		{[]float64{3, 4}, []float64{0, 0}, 5},
		{[]float64{1, 1}, []float64{1, 0}, 1},
		{[]float64{1}, []float64{1, 2}, math.Inf(1)},
	} {
		if got := RelErr(tc.a, tc.b); got != tc.want {
			t.Errorf("RelErr(%v, %v) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestProgress(t *testing.T) {
	var shown []string
	update = func(id, html string) { shown = append(shown, html) }
	defer func() { update = gonbui.UpdateHTML }()
	p := NewProgress()
	p.Update("run 1/2 <FGN>", 1, 10)
	p.Update("run 1/2 <FGN>", 10, 10)
	p.Done()
	if len(shown) < 3 || shown[0] != "" || shown[len(shown)-1] != "" {
		t.Fatalf("progress displays %q: want an empty block first and last, a bar between", shown)
	}
	if bar := shown[1]; !strings.HasPrefix(bar, "<pre>") || !strings.Contains(bar, "run 1/2 &lt;FGN&gt;") || !strings.Contains(bar, "1/10") {
		t.Errorf("first bar %q: want the escaped label and 1/10 in a <pre> block", bar)
	}
}

func TestProgressWriter(t *testing.T) {
	var shown []string
	update = func(id, html string) { shown = append(shown, html) }
	defer func() { update = gonbui.UpdateHTML }()
	w := NewProgress().Writer()
	for _, chunk := range []string{"\r panel (a)  10% (1/10) <x>\r", "\r panel (a)  20% (2/10)", "\n\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", chunk, n, err, len(chunk))
		}
	}
	// The third chunk has no text.
	want := []string{"", "<pre>panel (a)  10% (1/10) &lt;x&gt;</pre>", "<pre>panel (a)  20% (2/10)</pre>"}
	if !slices.Equal(shown, want) {
		t.Errorf("progress displays:\n got %q\nwant %q", shown, want)
	}
}
