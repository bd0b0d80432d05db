// Package progress is the one progress display of the repository's commands and experiments.
//
// On a terminal a Bar is redrawn in place (carriage returns) and cleared when the work is
// done. On any other writer (a file, a pipe, the log of a parent process) it writes plain
// lines instead: one every Interval while the work goes on and one when it is done, so that
// redirected output stays a readable log without redrawn frames.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Interval is the time between two progress lines on a writer that is not a terminal.
const Interval = 10 * time.Second

// redraw is the shortest time between two redraws of a terminal bar.
const redraw = 250 * time.Millisecond

// IsTerminal reports whether w is an interactive display: a terminal, or a writer that says
// it redraws lines in place (it has an IsTerminal method returning true, as a notebook's
// progress block does).
func IsTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case interface{ IsTerminal() bool }:
		return w.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(w.Fd()))
	}
	return false
}

// Options configures a Bar.
type Options struct {
	// Description labels the bar and every progress line.
	Description string
	// Bytes counts bytes (shown as kB, MB, ...) rather than units of work.
	Bytes bool
	// Delay shows nothing until the work has run this long, so that short work stays silent.
	Delay time.Duration
	// ETA shows the time left, estimated from the rate of the work so far.
	ETA bool
}

// Bar follows done out of total units of work. Its methods may be called from several
// goroutines.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	o        Options
	terminal bool
	total    int64
	done     int64
	start    time.Time
	shown    time.Time // the last progress line (not a terminal), or zero
	bar      *progressbar.ProgressBar
	finished bool
	now      func() time.Time
}

// New returns a Bar for total units of work written to w (see the package documentation).
func New(w io.Writer, total int64, o Options) *Bar {
	return newBar(w, total, o, time.Now)
}

func newBar(w io.Writer, total int64, o Options, now func() time.Time) *Bar {
	return &Bar{w: w, o: o, terminal: IsTerminal(w), total: total, start: now(), now: now}
}

// Steps returns a step-progress callback, func(done, total int), as the experiments take it:
// a Bar with o created at the first call (with that call's total).
func Steps(w io.Writer, o Options) func(done, total int) {
	var b *Bar
	return func(done, total int) {
		if b == nil {
			b = New(w, int64(total), o)
		}
		b.Set(int64(done))
	}
}

// Set records done units of work (the work is done when done reaches the total).
func (b *Bar) Set(done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = done
	b.update()
}

// Add records n more units of work.
func (b *Bar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	b.update()
}

// Write counts len(p) units of work (bytes, with Options.Bytes); it never fails, so that a Bar
// can follow a copy through io.MultiWriter.
func (b *Bar) Write(p []byte) (int, error) {
	b.Add(int64(len(p)))
	return len(p), nil
}

// Describe changes the description.
func (b *Bar) Describe(description string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.o.Description = description
	if b.bar != nil {
		b.bar.Describe(description)
	}
}

// Clear erases a terminal bar's line, so that a log line can be written in its place; the bar
// is drawn again at its next update. It does nothing on other writers.
func (b *Bar) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Clear()
	}
}

// update draws the bar or writes a progress line, as due. b.mu is held.
func (b *Bar) update() {
	if b.finished {
		return
	}
	now := b.now()
	elapsed := now.Sub(b.start)
	complete := b.total >= 0 && b.done >= b.total
	if elapsed < b.o.Delay {
		if complete {
			b.finished = true
		}
		return
	}
	if b.terminal {
		if b.bar == nil {
			b.bar = b.newTerminalBar()
		}
		_ = b.bar.Set64(b.done)
		if complete {
			b.finished = true
			_ = b.bar.Finish()
		}
		return
	}
	last := b.shown
	if last.IsZero() {
		last = b.start
	}
	if complete || now.Sub(last) >= Interval {
		b.shown = now
		fmt.Fprintln(b.w, b.line(elapsed, complete))
		b.finished = complete
	}
}

// newTerminalBar is the redrawn bar of a terminal.
func (b *Bar) newTerminalBar() *progressbar.ProgressBar {
	opts := []progressbar.Option{progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription(b.o.Description),
		progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(b.o.ETA), progressbar.OptionThrottle(redraw),
		progressbar.OptionClearOnFinish()}
	if b.o.Bytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return progressbar.NewOptions64(b.total, opts...)
}

// line is a progress line: the description, the count and its percentage, the time elapsed,
// and the time left (with Options.ETA, while work remains).
func (b *Bar) line(elapsed time.Duration, complete bool) string {
	s := b.o.Description + ": " + b.count(b.done)
	if b.total >= 0 {
		s += "/" + b.count(b.total)
		if b.total > 0 {
			s += fmt.Sprintf(" (%d%%)", 100*b.done/b.total)
		}
	}
	s += ", " + elapsed.Round(time.Second).String()
	if complete {
		return s + ", done"
	}
	if b.o.ETA && b.done > 0 && b.total > b.done {
		left := time.Duration(float64(elapsed) / float64(b.done) * float64(b.total-b.done))
		s += fmt.Sprintf(", ≈%s left", left.Round(time.Second))
	}
	return s
}

// count formats n units: as is, or in decimal byte units with Options.Bytes.
func (b *Bar) count(n int64) string {
	if !b.o.Bytes {
		return fmt.Sprint(n)
	}
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, k := float64(n)/unit, 0
	for ; v >= unit && k < 3; k++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGT"[k])
}
