package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// clock is a fake time source advanced by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestNotTerminal drives a Bar on a buffer (not a terminal) through simulated time and checks
// the lines it writes: none before Interval, one per Interval, one at completion, no carriage
// returns, nothing after completion, and nothing at all for work shorter than Delay.
func TestNotTerminal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     Options
		total int64
		steps []struct {
			after time.Duration
			done  int64
		}
		want []string
	}{
		{
			name: "periodic and final lines", o: Options{Description: "panel (a)", ETA: true}, total: 40,
			steps: []struct {
				after time.Duration
				done  int64
			}{{time.Second, 1}, {5 * time.Second, 2}, {5 * time.Second, 10}, {3 * time.Second, 11}, {8 * time.Second, 20}, {10 * time.Second, 40}, {time.Second, 40}},
			want: []string{"panel (a): 10/40 (25%), 11s, ≈33s left", "panel (a): 20/40 (50%), 22s, ≈22s left", "panel (a): 40/40 (100%), 32s, done"},
		},
		{
			name: "bytes", o: Options{Description: "weights.bin", Bytes: true}, total: 2_500_000,
			steps: []struct {
				after time.Duration
				done  int64
			}{{11 * time.Second, 1500}, {time.Second, 2_500_000}},
			want: []string{"weights.bin: 1.5 kB/2.5 MB (0%), 11s", "weights.bin: 2.5 MB/2.5 MB (100%), 12s, done"},
		},
		{
			name: "shorter than the delay", o: Options{Description: "run", Delay: 2 * time.Second}, total: 3,
			steps: []struct {
				after time.Duration
				done  int64
			}{{time.Second, 1}, {time.Second / 2, 3}, {20 * time.Second, 3}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			c := &clock{t: time.Unix(0, 0)}
			b := newBar(&buf, tc.total, tc.o, c.now)
			if b.terminal {
				t.Fatal("a bytes.Buffer was taken for a terminal")
			}
			for _, s := range tc.steps {
				c.t = c.t.Add(s.after)
				b.Set(s.done)
			}
			out := buf.String()
			if strings.Contains(out, "\r") {
				t.Errorf("carriage returns in non-terminal output %q", out)
			}
			var got []string
			if out != "" {
				got = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("lines:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestSteps checks the step callback: the bar takes the total of its first call.
func TestSteps(t *testing.T) {
	var buf bytes.Buffer
	step := Steps(&buf, Options{Description: "adam"})
	for done := range 4 {
		step(done+1, 4)
	}
	if got, want := buf.String(), "adam: 4/4 (100%), 0s, done\n"; got != want {
		t.Errorf("Steps wrote %q, want %q", got, want)
	}
}

type fakeTerminal struct{ bytes.Buffer }

func (*fakeTerminal) IsTerminal() bool { return true }

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name string
		w    interface{ Write([]byte) (int, error) }
		want bool
	}{
		{"buffer", &bytes.Buffer{}, false},
		{"regular file", f, false},
		{"self-declared terminal", &fakeTerminal{}, true},
	} {
		if got := IsTerminal(tc.w); got != tc.want {
			t.Errorf("IsTerminal(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTerminal checks that a terminal bar is redrawn in place and cleared when done.
func TestTerminal(t *testing.T) {
	var w fakeTerminal
	b := New(&w, 3, Options{Description: "panel (a)"})
	for range 3 {
		b.Add(1)
	}
	out := w.String()
	if !strings.Contains(out, "\r") || !strings.Contains(out, "panel (a)") {
		t.Errorf("terminal bar output %q lacks a redrawn line", out)
	}
	if last := out[strings.LastIndex(out, "\r"):]; strings.TrimSpace(last) != "" {
		t.Errorf("the finished bar was not cleared: output ends with %q", last)
	}
}
