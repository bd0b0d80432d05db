package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestMiniBar(t *testing.T) {
	for _, tc := range []struct {
		done, total, width int
		want               string
	}{
		{0, 10, 4, "▕░░░░▏"},
		{5, 10, 4, "▕██░░▏"}, // 2 of 4 cells
		{9, 10, 4, "▕███░▏"}, // rounded down
		{10, 10, 4, "▕████▏"},
		{3, 0, 4, "▕░░░░▏"},   // no total yet
		{12, 10, 4, "▕████▏"}, // clamped
	} {
		if got := miniBar(tc.done, tc.total, tc.width); got != tc.want {
			t.Errorf("miniBar(%d, %d, %d) = %q, want %q", tc.done, tc.total, tc.width, got, tc.want)
		}
	}
}

// TestNested drives the display as a sweep does (an item's callback, then the count over all
// items) and checks what it draws: the item in flight and its units, the overall count, the
// time left while units remain, and a cleared line at the end.
func TestNested(t *testing.T) {
	var stderr fakeTerminal
	var stdout bytes.Buffer
	n := NewNested(&stderr, "sweep", 0) // no delay: draw from the first unit
	step := n.Item("run 2/6 sgn seed 1")
	step(1, 12)
	n.Set(13, 72) // run 1 (12 steps) read back, then the first step of run 2
	drawn := stderr.String()
	for _, want := range []string{"run 2/6 sgn seed 1", "1/12", "sweep", "left)", "13/72"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the display lacks %q: %q", want, drawn)
		}
	}
	log := n.Clearing(&stdout)
	before := stderr.Len()
	if _, err := log.Write([]byte("run 2/6 sgn seed 1 done\n")); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "run 2/6 sgn seed 1 done\n" || stderr.Len() == before {
		t.Errorf("a log line should clear the display's line (stderr %q) and then be written (stdout %q)",
			stderr.String()[before:], stdout.String())
	}
	for done := 2; done <= 12; done++ {
		step(done, 12)
		n.Set(12+done, 72)
	}
	for done := 25; done <= 72; done += 12 { // the remaining runs read back
		n.Set(min(done+11, 72), 72)
	}
	if last := stderr.String()[strings.LastIndex(stderr.String(), "\r"):]; strings.TrimSpace(last) != "" {
		t.Errorf("the finished display was not cleared: ends with %q", last)
	}
}
