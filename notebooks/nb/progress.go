package nb

import (
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/janpfeifer/gonb/gonbui"
)

// progressEvery is the shortest interval between two updates of a Progress display.
const progressEvery = 250 * time.Millisecond

// update replaces the HTML of a display block; a variable so that tests can observe it.
var update = gonbui.UpdateHTML

// Progress shows the progress of a long cell in a transient HTML block of the cell's output,
// updated in place at most every 250 ms and emptied by Done, so that an executed notebook keeps
// no progress text (its outputs stay comparable from run to run). Outside a notebook it shows
// nothing.
type Progress struct {
	id          string
	start, last time.Time
}

// NewProgress creates the (empty) display block of a progress line.
func NewProgress() *Progress {
	p := &Progress{id: "progress_" + gonbui.UniqueID(), start: time.Now()}
	update(p.id, "")
	return p
}

// Update shows label with done of total units of work and the time elapsed since NewProgress.
// Calls closer than 250 ms to the previous shown one are skipped, except the one with done = total.
func (p *Progress) Update(label string, done, total int) {
	now := time.Now()
	if done < total && now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	update(p.id, progressHTML(label, done, total, now.Sub(p.start)))
}

// Writer returns an io.Writer for code that reports progress as terminal text (a progress bar
// redrawn after carriage returns): the progress block shows the last non-empty line written,
// at most every 250 ms.
func (p *Progress) Writer() *ProgressWriter { return &ProgressWriter{p: p} }

// ProgressWriter is the io.Writer of [Progress.Writer].
type ProgressWriter struct{ p *Progress }

// IsTerminal reports true: the block redraws the last line in place, so the progress package
// draws its bar here rather than periodic log lines.
func (*ProgressWriter) IsTerminal() bool { return true }

// Write shows the last non-empty line of b (lines end at '\r' or '\n'); it never fails.
func (w *ProgressWriter) Write(b []byte) (int, error) {
	lines := strings.FieldsFunc(string(b), func(r rune) bool { return r == '\r' || r == '\n' })
	for k := len(lines) - 1; k >= 0; k-- {
		if line := strings.TrimSpace(lines[k]); line != "" {
			if now := time.Now(); now.Sub(w.p.last) >= progressEvery {
				w.p.last = now
				update(w.p.id, "<pre>"+html.EscapeString(line)+"</pre>")
			}
			break
		}
	}
	return len(b), nil
}

// Done empties the progress block and waits until GoNB has received that.
func (p *Progress) Done() {
	update(p.id, "")
	gonbui.Sync()
}

// progressHTML renders one progress line: a bar, the label and the count, and the elapsed time.
func progressHTML(label string, done, total int, elapsed time.Duration) string {
	return fmt.Sprintf(`<progress value="%d" max="%d"></progress> %s: %d/%d (%s)`,
		done, max(total, 1), html.EscapeString(label), done, total, elapsed.Round(time.Second))
}
