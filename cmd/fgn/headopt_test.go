package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
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

// TestSweepBar drives the sweep display as headopt.Sweep does (a run's step callback, then the
// sweep's count) and checks what it draws: the run in flight and its steps, the sweep's count,
// the time left while steps remain, and a cleared line at the end.
// terminal is a writer that the progress package takes for a terminal.
type terminal struct{ bytes.Buffer }

func (*terminal) IsTerminal() bool { return true }

func TestSweepBar(t *testing.T) {
	var stderr terminal
	var stdout bytes.Buffer
	s := &sweepBar{w: &stderr} // no delay: draw from the first step
	step := s.runProgress(2, 6, method.SGN, 1)
	step(1, 12)
	s.progress(13, 72) // run 1 (12 steps) read back, then the first step of run 2
	drawn := stderr.String()
	for _, want := range []string{"run 2/6 sgn seed 1 ▕░░░░░░░░░░▏ 1/12 · sweep", "left)", "(13/72"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("sweep bar lacks %q: %q", want, drawn)
		}
	}
	log := s.clearing(&stdout)
	before := stderr.Len()
	if _, err := log.Write([]byte("run 2/6 sgn seed 1 done\n")); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "run 2/6 sgn seed 1 done\n" || stderr.Len() == before {
		t.Errorf("a log line should clear the bar's line (stderr %q) and then be written (stdout %q)",
			stderr.String()[before:], stdout.String())
	}
	for done := 2; done <= 12; done++ {
		step(done, 12)
		s.progress(12+done, 72)
	}
	for done := 25; done <= 72; done += 12 { // the remaining runs read back
		s.progress(min(done+11, 72), 72)
	}
	if last := stderr.String()[strings.LastIndex(stderr.String(), "\r"):]; strings.TrimSpace(last) != "" {
		t.Errorf("the finished sweep's bar was not cleared: ends with %q", last)
	}
}
