// Package doclinks checks the links of the repository's documents: every relative link names a
// file that exists, and every #anchor names a heading of its target by GitHub's anchor rules.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	// inlineLink is a Markdown link or image: [text](target) or [text](target "title").
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink is a reference definition: [label]: target.
	refLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// codeSpan is inline code, whose text is not a link.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// mdLink is a link inside a heading: its text stays in the anchor.
	mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Anchor returns GitHub's anchor of a heading's text: Markdown links reduced to their text,
// lower case, every character other than a letter, digit, "-", "_" or space removed, and
// spaces replaced by "-".
func Anchor(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// lines returns the lines of a Markdown document outside fenced code blocks.
func lines(markdown string) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(markdown, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			continue
		}
		out = append(out, l)
	}
	return out
}

// Anchors returns the anchors of a Markdown document's headings; a repeated anchor gets
// "-1", "-2", ... as on GitHub.
func Anchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines(markdown) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := Anchor(m[1])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// Links returns the link targets of a Markdown document outside code blocks and code spans.
func Links(markdown string) []string {
	var out []string
	for _, l := range lines(markdown) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
		for _, m := range refLink.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// CheckTarget returns "" when a relative link target (a path relative to dir, an optional
// #anchor, or both) resolves, and else what is wrong with it. Absolute URLs (with a scheme)
// are not checked.
func CheckTarget(dir, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := filepath.Join(dir, filepath.FromSlash(path))
	st, err := os.Stat(file)
	if err != nil {
		return fmt.Sprintf("link %q: %s does not exist", target, path)
	}
	if anchor == "" {
		return ""
	}
	if st.IsDir() || !strings.HasSuffix(file, ".md") {
		return fmt.Sprintf("link %q: an anchor into %s, which is not a Markdown file", target, path)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("link %q: %v", target, err)
	}
	if !Anchors(string(text))[anchor] {
		return fmt.Sprintf("link %q: %s has no heading with anchor #%s", target, filepath.Base(file), anchor)
	}
	return ""
}

// CheckMarkdown returns the problems of the links of the Markdown file at path.
func CheckMarkdown(path string) ([]string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, target := range Links(string(text)) {
		if strings.HasPrefix(target, "#") {
			target = filepath.Base(path) + target
		}
		if p := CheckTarget(filepath.Dir(path), target); p != "" {
			problems = append(problems, p)
		}
	}
	return problems, nil
}
