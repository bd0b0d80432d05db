package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Nested follows a sequence of items (a sweep's runs) on one line: the item in flight with its
// own bar and count, then a Bar of the units of work over all items, with the time left
// estimated from the rate of the units the items counted so far (items that count none, such as
// finished runs read back, are done but say nothing about the rate). Like a Bar, it is redrawn
// on a terminal once the work has taken delay and written as periodic lines elsewhere.
type Nested struct {
	w           io.Writer
	description string
	delay       time.Duration
	bar         *Bar
	// The item in flight: its label and units; counted is the units the items counted since
	// since, when the first counting item began.
	item                string
	itemDone, itemTotal int
	counted             int
	since               time.Time
}

// NewNested returns a Nested display written to w, labelled description.
func NewNested(w io.Writer, description string, delay time.Duration) *Nested {
	return &Nested{w: w, description: description, delay: delay}
}

// Item starts the item label and returns its callback, func(done, total int) of its units.
func (n *Nested) Item(label string) func(done, total int) {
	n.item, n.itemDone, n.itemTotal = label, 0, 0
	if n.since.IsZero() {
		n.since = time.Now()
	}
	return func(done, total int) {
		n.itemDone, n.itemTotal = done, total
		n.counted++
	}
}

// Set records done units over all items out of total, and redraws.
func (n *Nested) Set(done, total int) {
	if n.bar == nil {
		n.bar = New(n.w, int64(total), Options{Description: n.description, Delay: n.delay})
	}
	desc := n.description
	if n.item != "" {
		desc = fmt.Sprintf("%s %s %d/%d · %s", n.item, miniBar(n.itemDone, n.itemTotal, 10), n.itemDone, n.itemTotal, n.description)
	}
	if elapsed := time.Since(n.since); n.counted > 0 && done < total {
		left := time.Duration(float64(elapsed) / float64(n.counted) * float64(total-done))
		desc += fmt.Sprintf(" (≈%s left)", left.Round(time.Second))
	}
	n.bar.Describe(desc)
	n.bar.Set(int64(done))
}

// Clearing returns w, clearing the display's line before every write so that log lines do not
// land on it; the display is redrawn at its next update.
func (n *Nested) Clearing(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if n.bar != nil {
			n.bar.Clear()
		}
		return w.Write(p)
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// miniBar draws done/total as a bar of width cells (done rounded down to whole cells).
func miniBar(done, total, width int) string {
	full := 0
	if total > 0 {
		full = min(width, max(0, done*width/total))
	}
	return "▕" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "▏"
}
