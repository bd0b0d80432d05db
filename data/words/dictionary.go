package words

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/unicode/norm"
)

// dictionary is what Load keeps of one hunspell dictionary: the hashes of its distinct usable
// words, sorted, and the first of those words in hash order, its candidate examples.
type dictionary struct {
	hashes     []uint64
	candidates []string
}

// readDictionary reads dir/<name>.dic in the character set its affix file dir/<name>.aff
// declares (SET; ISO8859-1 when it declares none, as hunspell assumes) and keeps the first keep
// of its usable words in hash order. An entry's word is its text up to the first '/' (the affix
// flags) or white space (morphological fields), in Unicode NFC; it is usable when it has
// MinLength to Length letters, all lower case but perhaps the first (a proper noun or a German
// noun), which is then lowered. Acronyms, abbreviations and words with digits, hyphens or
// apostrophes are not usable.
func readDictionary(dir, name string, keep int) (*dictionary, error) {
	aff, err := os.ReadFile(dir + "/" + name + ".aff")
	if err != nil {
		return nil, err
	}
	path := dir + "/" + name + ".dic"
	dic, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if dic, err = toUTF8(dic, charset(aff)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	type word struct {
		hash uint64
		text string
	}
	var all []word
	sc := bufio.NewScanner(bytes.NewReader(dic))
	sc.Buffer(nil, 1<<20)
	first := true
	for sc.Scan() {
		if first { // the entry count
			first = false
			continue
		}
		entry := sc.Text()
		if k := strings.IndexAny(entry, "/ \t"); k >= 0 {
			entry = entry[:k]
		}
		if w, ok := usable(norm.NFC.String(entry)); ok {
			all = append(all, word{hash(w), w})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	slices.SortFunc(all, func(a, b word) int { return cmp.Compare(a.hash, b.hash) })
	all = slices.CompactFunc(all, func(a, b word) bool { return a.hash == b.hash })
	d := &dictionary{hashes: make([]uint64, len(all))}
	for k, w := range all {
		d.hashes[k] = w.hash
		if k < keep {
			d.candidates = append(d.candidates, w.text)
		}
	}
	return d, nil
}

// usable returns w lowered when it is a usable word (see readDictionary).
func usable(w string) (string, bool) {
	n := utf8.RuneCountInString(w)
	if n < MinLength || n > Length {
		return "", false
	}
	var b strings.Builder
	for k, r := range []rune(w) {
		if k == 0 && unicode.IsUpper(r) {
			r = unicode.ToLower(r)
		}
		if !unicode.IsLower(r) {
			return "", false
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// hash is a word's 64-bit FNV-1a hash mixed by SplitMix64's finaliser (FNV-1a alone orders
// words that differ in their last letters next to each other): the order in which Load samples
// words, and their identity across dictionaries.
func hash(w string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(w))
	x := h.Sum64()
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// charset returns the character set an affix file declares with SET, "ISO8859-1" if none.
func charset(aff []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(aff))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "SET" {
			return f[1]
		}
	}
	return "ISO8859-1"
}

// toUTF8 decodes text in the hunspell character set name (UTF-8, ISO8859-n, KOI8-R, ...).
func toUTF8(text []byte, name string) ([]byte, error) {
	if strings.EqualFold(name, "UTF-8") {
		if !utf8.Valid(text) {
			return nil, fmt.Errorf("not valid UTF-8, the character set its affix file declares")
		}
		return text, nil
	}
	iana := name
	if n, ok := strings.CutPrefix(strings.ToUpper(name), "ISO8859-"); ok { // hunspell's spelling
		iana = "ISO-8859-" + n
	}
	enc, err := ianaindex.IANA.Encoding(iana)
	if err != nil || enc == nil {
		return nil, fmt.Errorf("unknown character set %q declared by its affix file", name)
	}
	return enc.NewDecoder().Bytes(text)
}
