// Package mdtext writes literal text into generated Markdown (figure captions, tables) and checks
// it: a `*` or `_` meant literally, such as those of "alpha*1/(C-1)" or "p_star", must be in a code
// span (Code) or escaped (Escape), or GitHub and Jupyter render it as emphasis and drop it
// (StrayEmphasis finds those that are not).
package mdtext

import (
	"fmt"
	"regexp"
	"strings"
)

// bold is an intended strong-emphasis run, **text** with no `*` inside.
var bold = regexp.MustCompile(`\*\*[^*\n]+\*\*`)

// StrayEmphasis lists every `*` and `_` of md, with its line and the line's text, that is not in
// a code span, not backslash-escaped and not a delimiter of an intended **bold** run. Captions
// and tables put parameter lists and identifiers in code spans and escape other such characters,
// so the list is empty for Markdown that renders as intended.
func StrayEmphasis(md string) []string {
	var problems []string
	for n, line := range strings.Split(md, "\n") {
		rest := bold.ReplaceAllString(stripEscapes(stripCodeSpans(line)), "")
		if i := strings.IndexAny(rest, "*_"); i >= 0 {
			problems = append(problems, fmt.Sprintf("line %d: unescaped %q outside code spans: %s", n+1, rest[i], line))
		}
	}
	return problems
}

// stripCodeSpans removes the code spans of a line: a run of n backticks up to the next run of
// exactly n backticks (CommonMark's rule); a run without its closing run is literal text.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := run(line, i)
		end := -1
		for j := i + n; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			if m := run(line, j); m == n {
				end = j + m
				break
			} else {
				j += m
			}
		}
		if end < 0 {
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

// run returns the length of the run of backticks starting at line[i].
func run(line string, i int) int {
	n := 0
	for i+n < len(line) && line[i+n] == '`' {
		n++
	}
	return n
}

// stripEscapes removes backslash escapes (a backslash and the character after it).
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Escape backslash-escapes the Markdown emphasis characters `*` and `_` of literal text.
func Escape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `_`, `\_`).Replace(s)
}

// Code returns s as a Markdown code span, with a fence of one more backtick than the longest run
// of backticks in s (and spaces inside when s starts or ends with a backtick).
func Code(s string) string {
	longest := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			n := run(s, i)
			longest = max(longest, n)
			i += n - 1
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
