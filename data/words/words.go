// Package words is a word → language identification task built from Debian's hunspell
// dictionaries: each example is a word of one of 20 languages (Languages) as a fixed-length
// sequence of character ids, its label the language. The dictionaries are installed by apt
// (Packages: hunspell-en-us, hunspell-de-de, ...), so the task is available offline on any
// Debian or Ubuntu machine; Load names each dictionary's package, upstream and licence, read
// from the package's copyright file, and returns an error naming the missing packages when
// dictionaries are absent.
//
// The task is deterministic: from each dictionary's distinct usable words (readDictionary) that
// appear in no other of the 20 dictionaries, Load takes the perLanguage words of smallest hash
// (a 64-bit FNV-1a hash, mixed). Split holds out a stratified part by a seeded shuffle, and Datasets gives both
// parts as GoMLX datasets of int32 character ids.
package words

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"

	"github.com/fgn-paper/fgn/features"
)

// Sizes of an example: a word has MinLength to Length characters, written from the start of
// its sequence of Length character ids and padded at the end with Padding.
const (
	MinLength = 3
	Length    = 16
	Padding   = 0
)

// Where the dictionaries and their Debian copyright files are installed.
const (
	DictionaryDir = "/usr/share/hunspell"
	DocDir        = "/usr/share/doc"
)

// Defaults of the task as the model zoo trains on it: 250 words per language (5000 words), 20 %
// held out.
const (
	DefaultPerLanguage = 250
	HeldOutFraction    = 0.2
)

// ErrMissing is wrapped by Load's error when dictionaries are not installed.
var ErrMissing = errors.New("hunspell dictionaries missing")

// Source is one language's dictionary as Load read it.
type Source struct {
	Language
	Provenance
	// Path is the dictionary file; Usable counts its distinct usable words and Ambiguous those
	// of them that another language's dictionary also has (none is an example).
	Path              string
	Usable, Ambiguous int
}

// Data is the task: Set holds the examples (Words[i] as character ids, float32 so that
// features.StratifiedSplit splits it, label its index in Languages), in language order.
type Data struct {
	Set   *features.Set
	Words []string
	// Vocabulary lists the characters of the examples in Unicode order: character id k ≥ 1 is
	// Vocabulary[k−1]; 0 is Padding.
	Vocabulary []rune
	Sources    []Source
}

// Load builds the task with perLanguage words per language from the dictionaries installed in
// DictionaryDir, reading their provenance from DocDir.
func Load(perLanguage int) (*Data, error) { return LoadFrom(DictionaryDir, DocDir, perLanguage) }

// Missing returns the Debian packages of Languages whose dictionary is not in dir.
func Missing(dir string) []string {
	var missing []string
	for _, l := range Languages {
		if _, err := os.Stat(dir + "/" + l.Dictionary + ".dic"); err != nil {
			missing = append(missing, l.Package)
		}
	}
	return missing
}

// LoadFrom is Load with the dictionaries in dictDir and the copyright files in docDir.
func LoadFrom(dictDir, docDir string, perLanguage int) (*Data, error) {
	if perLanguage < 1 {
		return nil, fmt.Errorf("words: %d words per language, want ≥ 1", perLanguage)
	}
	if missing := Missing(dictDir); len(missing) > 0 {
		return nil, fmt.Errorf("words: %w in %s for %d of %d languages: install them with `apt-get install %s`",
			ErrMissing, dictDir, len(missing), len(Languages), strings.Join(missing, " "))
	}
	// Every dictionary keeps 8 candidates per example it gives: more than enough unless most of
	// its first words in hash order are also another language's (Load then says so).
	keep := 8 * perLanguage
	dicts := make([]*dictionary, len(Languages))
	var all []uint64
	for k, l := range Languages {
		d, err := readDictionary(dictDir, l.Dictionary, keep)
		if err != nil {
			return nil, fmt.Errorf("words: %s (%s): %w", l.Name, l.Package, err)
		}
		dicts[k] = d
		all = append(all, d.hashes...)
	}
	// The words of more than one dictionary, by hash: the repeated entries of all the sorted,
	// per-dictionary distinct hashes.
	slices.Sort(all)
	var shared []uint64
	for k := 1; k < len(all); k++ {
		if all[k] == all[k-1] && (len(shared) == 0 || shared[len(shared)-1] != all[k]) {
			shared = append(shared, all[k])
		}
	}
	isShared := func(h uint64) bool { _, found := slices.BinarySearch(shared, h); return found }

	data := &Data{Set: &features.Set{D: Length}}
	chars := map[rune]bool{}
	for k, l := range Languages {
		d := dicts[k]
		src := Source{Language: l, Path: dictDir + "/" + l.Dictionary + ".dic", Usable: len(d.hashes)}
		for _, h := range d.hashes {
			if isShared(h) {
				src.Ambiguous++
			}
		}
		var err error
		if src.Provenance, err = provenance(docDir, l); err != nil {
			return nil, fmt.Errorf("words: %s (%s): %w", l.Name, l.Package, err)
		}
		taken := 0
		for _, w := range d.candidates {
			if taken == perLanguage {
				break
			}
			if isShared(hash(w)) {
				continue
			}
			data.Words = append(data.Words, w)
			data.Set.Y = append(data.Set.Y, int32(k))
			for _, r := range w {
				chars[r] = true
			}
			taken++
		}
		if taken < perLanguage {
			return nil, fmt.Errorf("words: %s (%s) gives %d unambiguous words of the %d asked for (%d usable, %d also in "+
				"another dictionary)", l.Name, l.Package, taken, perLanguage, src.Usable, src.Ambiguous)
		}
		data.Sources = append(data.Sources, src)
	}
	for r := range chars {
		data.Vocabulary = append(data.Vocabulary, r)
	}
	slices.Sort(data.Vocabulary)
	data.Set.N = len(data.Words)
	data.Set.X = make([]float32, data.Set.N*Length)
	for i, w := range data.Words {
		for j, r := range []rune(w) {
			id, _ := slices.BinarySearch(data.Vocabulary, r)
			data.Set.X[i*Length+j] = float32(id + 1)
		}
	}
	return data, nil
}

// Classes is the number of languages, the task's classes.
func (d *Data) Classes() int { return len(Languages) }

// VocabularySize is the number of character ids, Padding included: the input size of an
// embedding of the characters.
func (d *Data) VocabularySize() int { return len(d.Vocabulary) + 1 }

// Split returns the task's training part and a stratified HeldOutFraction held out by a seeded
// shuffle within each language.
func (d *Data) Split(seed uint64) (trainSet, heldOut *features.Set, err error) {
	if trainSet, heldOut, err = features.StratifiedSplit(d.Set, HeldOutFraction, seed); err != nil {
		return nil, nil, fmt.Errorf("words: %w", err)
	}
	return trainSet, heldOut, nil
}

// Datasets returns Split(seed) as GoMLX in-memory datasets on be, with inputs N×Length int32
// character ids and labels N×1 int32: the training part in batches of batch examples, reshuffled
// every epoch by a generator seeded with seed (the last partial batch is dropped, so every step
// sees the same shapes), and the held-out part as a single batch, for train.Trainer.Eval.
func (d *Data) Datasets(be compute.Backend, batch int, seed uint64) (trainDS, heldOutDS *dataset.InMemoryDataset, err error) {
	trainSet, heldOut, err := d.Split(seed)
	if err != nil {
		return nil, nil, err
	}
	if batch < 1 || batch > trainSet.N {
		return nil, nil, fmt.Errorf("words: batch size %d outside [1, %d], the training examples", batch, trainSet.N)
	}
	if trainDS, err = inMemory(be, "words-train", trainSet); err != nil {
		return nil, nil, err
	}
	trainDS.BatchSize(batch, true).Shuffle().WithRand(rand.New(rand.NewSource(int64(seed))))
	if heldOutDS, err = inMemory(be, "words-held-out", heldOut); err != nil {
		return nil, nil, err
	}
	heldOutDS.BatchSize(heldOut.N, false)
	return trainDS, heldOutDS, nil
}

// inMemory returns the set as a GoMLX in-memory dataset: inputs N×Length int32, labels N×1 int32.
func inMemory(be compute.Backend, name string, s *features.Set) (*dataset.InMemoryDataset, error) {
	ids := make([]int32, len(s.X))
	for k, v := range s.X {
		ids[k] = int32(v)
	}
	x := tensors.FromFlatDataAndDimensions(ids, s.N, Length)
	y := tensors.FromFlatDataAndDimensions(s.Y, s.N, 1)
	ds, err := dataset.InMemoryFromData(be, name, []any{x}, []any{y})
	if err != nil {
		return nil, fmt.Errorf("words: %w", err)
	}
	return ds, nil
}
