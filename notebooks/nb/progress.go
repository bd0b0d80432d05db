package nb

import (
	"html"
	"strings"

	"github.com/janpfeifer/gonb/gonbui"

	"github.com/fgn-paper/fgn/internal/progress"
)

// update replaces the HTML of a display block; a variable so that tests can observe it.
var update = gonbui.UpdateHTML

// Progress shows the progress of a long cell in a transient HTML block of the cell's output,
// emptied by Done, so that an executed notebook keeps no progress text (its outputs stay
// comparable from run to run). What it shows is the progress package's bar, as on a terminal.
// Outside a notebook it shows nothing.
type Progress struct {
	id    string
	label string
	bar   *progress.Bar
}

// NewProgress creates the (empty) display block of a progress line.
func NewProgress() *Progress {
	p := &Progress{id: "progress_" + gonbui.UniqueID()}
	update(p.id, "")
	return p
}

// Update shows label with done of total units of work; a new label starts a new bar.
func (p *Progress) Update(label string, done, total int) {
	if p.bar == nil || label != p.label {
		p.label = label
		p.bar = progress.New(p.Writer(), int64(total), progress.Options{Description: label})
	}
	p.bar.Set(int64(done))
}

// Writer returns an io.Writer for code that reports progress as terminal text (the progress
// package's bar, redrawn after carriage returns): the block shows the last non-empty line written.
func (p *Progress) Writer() *ProgressWriter { return &ProgressWriter{p: p} }

// ProgressWriter is the io.Writer of [Progress.Writer].
type ProgressWriter struct{ p *Progress }

// IsTerminal reports true: the block redraws the last line in place, so the progress package
// draws its bar here (at most every 250 ms) rather than periodic log lines.
func (*ProgressWriter) IsTerminal() bool { return true }

// Write shows the last non-empty line of b (lines end at '\r' or '\n'); it never fails.
func (w *ProgressWriter) Write(b []byte) (int, error) {
	lines := strings.FieldsFunc(string(b), func(r rune) bool { return r == '\r' || r == '\n' })
	for k := len(lines) - 1; k >= 0; k-- {
		if line := strings.TrimSpace(lines[k]); line != "" {
			update(w.p.id, "<pre>"+html.EscapeString(line)+"</pre>")
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
