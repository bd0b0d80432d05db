package words

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Provenance is where a dictionary comes from and under which licence, as its Debian package's
// copyright file states it.
type Provenance struct {
	// Upstream names the upstream project and where it is distributed ("" when the copyright
	// file does not say).
	Upstream string
	// Copyright is the first line of the dictionary's copyright holders ("" when not machine-readable).
	Copyright string
	// Licence is the dictionary's licence: its stanza's License field in a machine-readable
	// (DEP-5) copyright file, else as Languages records the file's statement.
	Licence string
	// File is the copyright file read.
	File string
}

// provenance reads the copyright file of l's package under docDir.
func provenance(docDir string, l Language) (Provenance, error) {
	path := docDir + "/" + l.Package + "/copyright"
	data, err := os.ReadFile(path)
	if err != nil {
		return Provenance{}, err
	}
	p := Provenance{File: path}
	paragraphs := dep5(string(data))
	if len(paragraphs) == 0 || paragraphs[0]["Format"] == "" {
		if l.licence == "" {
			return p, fmt.Errorf("%s is not a machine-readable (DEP-5) copyright file and words.Languages records no licence for %s", path, l.Package)
		}
		p.Licence = l.licence
		return p, nil
	}
	header := paragraphs[0]
	p.Upstream = strings.TrimSpace(header["Upstream-Name"] + " " + header["Source"])
	want := l.stanza
	if want == "" {
		want = "*"
	}
	for _, para := range paragraphs[1:] {
		if slices.Contains(strings.Fields(para["Files"]), want) {
			p.Copyright, _, _ = strings.Cut(strings.TrimSpace(para["Copyright"]), "\n")
			p.Licence, _, _ = strings.Cut(strings.TrimSpace(para["License"]), "\n")
			if p.Licence == "" {
				break
			}
			return p, nil
		}
	}
	return p, fmt.Errorf("%s has no stanza \"Files: %s\" with a License field", path, want)
}

// dep5 splits a Debian copyright file (DEP-5) into paragraphs of fields. A continuation line
// (starting with a space or tab) extends the previous field, joined by a newline; a field's first
// line is its value up to the end of line.
func dep5(text string) []map[string]string {
	var paragraphs []map[string]string
	var cur map[string]string
	var last string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			cur = nil
		case line[0] == ' ' || line[0] == '\t':
			if cur != nil && last != "" {
				cur[last] += "\n" + strings.TrimSpace(line)
			}
		default:
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if cur == nil {
				cur = map[string]string{}
				paragraphs = append(paragraphs, cur)
			}
			last = key
			cur[key] = strings.TrimSpace(value)
		}
	}
	return paragraphs
}
