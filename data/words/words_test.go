package words

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// TestUsable checks which dictionary words become examples, and how.
func TestUsable(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"haus", "haus", true},
		{"Haus", "haus", true},                         // a German noun
		{"Straße", "straße", true},                     // ß is lower case
		{"İstanbul", "istanbul", true},                 // Turkish dotted capital I lowers to i, one rune
		{"NATO", "", false},                            // an acronym
		{"McDonald", "", false},                        // a capital inside
		{"l'eau", "", false},                           // an apostrophe
		{"x2", "", false},                              // a digit, and too short
		{"ab", "", false},                              // shorter than MinLength
		{"abc", "abc", true},                           // MinLength
		{"abcdefghijklmnop", "abcdefghijklmnop", true}, // Length
		{"abcdefghijklmnopq", "", false},               // longer than Length
		{"über-all", "", false},                        // a hyphen
	} {
		got, ok := usable(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("usable(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestToUTF8 decodes the character sets hunspell dictionaries declare, against Unicode code
// points written out by hand.
func TestToUTF8(t *testing.T) {
	for _, tc := range []struct {
		set  string
		in   []byte
		want string
	}{
		{"UTF-8", []byte("żółw"), "żółw"},
		{"ISO8859-1", []byte{'b', 0xf8, 'r'}, "b\u00f8r"},                   // ø
		{"ISO8859-2", []byte{0xbf, 0xf3, 0xb3, 'w'}, "\u017c\u00f3\u0142w"}, // żółw
		{"ISO8859-13", []byte{0xe0, 'i', 'k'}, "\u0105ik"},                  // ą
	} {
		got, err := toUTF8(tc.in, tc.set)
		if err != nil || string(got) != tc.want {
			t.Errorf("toUTF8(% x, %s) = %q, %v; want %q", tc.in, tc.set, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		set  string
		in   []byte
		want string
	}{
		{"UTF-8", []byte{0xff, 'a'}, "not valid UTF-8"},
		{"EBCDIC-XYZ", []byte("abc"), `unknown character set "EBCDIC-XYZ"`},
	} {
		if _, err := toUTF8(tc.in, tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("toUTF8(%s): error %v, want one containing %q", tc.set, err, tc.want)
		}
	}
}

// fakeInstall writes a hunspell dictionary and a copyright file for every language into dict
// and doc: the words of words(k) for language k in ISO8859-2 (SET ISO8859-2) with affix flags
// and morphological fields, and a machine-readable copyright file naming licence "L-<code>".
func fakeInstall(t *testing.T, dict, doc string, words func(k int) []string) {
	t.Helper()
	enc := charmap.ISO8859_2.NewEncoder()
	for k, l := range Languages {
		text := []byte("99\n")
		for _, w := range words(k) {
			e, err := enc.String(w + "/AB\tpo:noun\n")
			if err != nil {
				t.Fatal(err)
			}
			text = append(text, e...)
		}
		files := map[string][]byte{
			filepath.Join(dict, l.Dictionary+".dic"): text,
			filepath.Join(dict, l.Dictionary+".aff"): []byte("# affixes\nSET ISO8859-2\nFLAG long\n"),
			filepath.Join(doc, l.Package, "copyright"): []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n" +
				"Upstream-Name: up-" + l.Code + "\nSource: https://example.org/" + l.Code + "\n\n" +
				"Files: *\nCopyright: someone\nLicense: L-" + l.Code + "\n\n" +
				"Files: debian/*\nCopyright: packager\nLicense: other\n\n" +
				"Files: " + l.stanza + "\nCopyright:\n holder-" + l.Code + "\n more\nLicense: L-" + l.Code + "\n"),
		}
		for path, data := range files {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLoadFrom builds the task from fake dictionaries: per language the words "<code>x<n>"
// plus "shared", which every dictionary has, and "Zebra", which two have. Each language gives
// the perLanguage words asked for, none of them in another dictionary; the character ids spell
// each word from the start of its sequence, padded after it; the provenance is each stanza's.
func TestLoadFrom(t *testing.T) {
	dict, doc := t.TempDir(), t.TempDir()
	letters := "abcdefghijklmnopqrstuvwxyz"
	fakeInstall(t, dict, doc, func(k int) []string {
		ws := []string{"shared", "Shared", "NATO"}
		if k < 2 {
			ws = append(ws, "Zebra")
		}
		for n := range 6 {
			ws = append(ws, Languages[k].Code+"x"+letters[n:n+1]+"ż")
		}
		return ws
	})
	const perLanguage = 4
	data, err := LoadFrom(dict, doc, perLanguage)
	if err != nil {
		t.Fatal(err)
	}
	if data.Set.N != perLanguage*len(Languages) || data.Set.D != Length || len(data.Words) != data.Set.N {
		t.Fatalf("%d examples of dimension %d and %d words, want %d of %d", data.Set.N, data.Set.D, len(data.Words),
			perLanguage*len(Languages), Length)
	}
	if !slices.IsSorted(data.Vocabulary) || len(slices.Compact(slices.Clone(data.Vocabulary))) != len(data.Vocabulary) {
		t.Errorf("vocabulary %q is not sorted and distinct", string(data.Vocabulary))
	}
	for i, w := range data.Words {
		k := data.Set.Y[i]
		if !strings.HasPrefix(w, Languages[k].Code+"x") {
			t.Errorf("example %d: %q labelled %s", i, w, Languages[k].Code)
		}
		var spelled []rune
		for j, id := range data.Set.Example(i) {
			switch {
			case j < utf8.RuneCountInString(w) && id >= 1:
				spelled = append(spelled, data.Vocabulary[int(id)-1])
			case j >= utf8.RuneCountInString(w) && id == Padding:
			default:
				t.Errorf("example %d (%q): id %v at position %d", i, w, id, j)
			}
		}
		if string(spelled) != w {
			t.Errorf("example %d: ids spell %q, want %q", i, string(spelled), w)
		}
	}
	for k, s := range data.Sources {
		l := Languages[k]
		wantAmbiguous := 1 // "shared"
		if k < 2 {
			wantAmbiguous = 2 // and "zebra"
		}
		wantHolder := "someone"
		if l.stanza != "" {
			wantHolder = "holder-" + l.Code
		}
		switch {
		case s.Usable != 6+wantAmbiguous || s.Ambiguous != wantAmbiguous:
			t.Errorf("%s: %d usable, %d ambiguous words; want %d, %d", l.Code, s.Usable, s.Ambiguous, 6+wantAmbiguous, wantAmbiguous)
		case s.Licence != "L-"+l.Code || s.Copyright != wantHolder || s.Upstream != "up-"+l.Code+" https://example.org/"+l.Code:
			t.Errorf("%s: provenance %+v", l.Code, s.Provenance)
		}
	}
	again, err := LoadFrom(dict, doc, perLanguage)
	if err != nil || !slices.Equal(again.Words, data.Words) {
		t.Errorf("a second load gives %v (%v), want the same words %v", again.Words, err, data.Words)
	}
	if _, err := LoadFrom(dict, doc, 7); err == nil || !strings.Contains(err.Error(), "gives 6 unambiguous words of the 7") {
		t.Errorf("7 words per language of 6: error %v", err)
	}
}

// TestLoadErrors: missing dictionaries name the packages to install; a copyright file without
// the dictionary's stanza, or not machine-readable for a package Languages records no licence
// of, is an error naming it.
func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	_, err := LoadFrom(empty, empty, 10)
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "apt-get install "+strings.Join(Packages(), " ")) {
		t.Errorf("no dictionaries: error %v", err)
	}
	dict, doc := t.TempDir(), t.TempDir()
	fakeInstall(t, dict, doc, func(k int) []string { return []string{Languages[k].Code + "word"} })
	if err := os.Remove(filepath.Join(dict, "de_DE.dic")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFrom(dict, doc, 1); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "for 1 of 20 languages: install them with `apt-get install hunspell-de-de`") {
		t.Errorf("German missing: error %v", err)
	}
	fakeInstall(t, dict, doc, func(k int) []string { return []string{Languages[k].Code + "word"} })
	es := filepath.Join(doc, "hunspell-es", "copyright")
	if err := os.WriteFile(es, []byte("Format: x\n\nFiles: *\nLicense: MPL-2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFrom(dict, doc, 1); err == nil || !strings.Contains(err.Error(), `has no stanza "Files: dictionaries/es/*"`) {
		t.Errorf("Spanish stanza missing: error %v", err)
	}
	if err := os.WriteFile(es, []byte("This package was debianized by someone.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFrom(dict, doc, 1); err == nil || !strings.Contains(err.Error(), "is not a machine-readable (DEP-5) copyright file") {
		t.Errorf("Spanish copyright not DEP-5: error %v", err)
	}
}

// TestCIInstallsPackages checks that .ci/install.sh, which CI and the Dockerfile run, installs
// every dictionary package of Languages.
func TestCIInstallsPackages(t *testing.T) {
	script, err := os.ReadFile("../../.ci/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.FieldsFunc(string(script), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	for _, p := range Packages() {
		if !slices.Contains(listed, p) {
			t.Errorf(".ci/install.sh does not install %s", p)
		}
	}
}
