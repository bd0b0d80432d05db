package words_test

import (
	"iter"
	"testing"

	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/data/words"
	"github.com/fgn-paper/fgn/data/words/wordstest"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestInstalled loads the task from the installed dictionaries (skipped, naming the packages,
// where they are not installed and wordstest.RequireEnv is not set): DefaultPerLanguage words of
// every language, each dictionary with a licence, the held-out split stratified (HeldOutFraction
// of every language) and Datasets' shapes those of the split.
func TestInstalled(t *testing.T) {
	data := wordstest.Load(t)
	perLanguage := map[int32]int{}
	for _, y := range data.Set.Y {
		perLanguage[y]++
	}
	for k, l := range words.Languages {
		s := data.Sources[k]
		t.Logf("%s (%s): %d usable words, %d also in another dictionary; %s; %s", l.Name, s.Path, s.Usable, s.Ambiguous,
			s.Licence, s.File)
		if perLanguage[int32(k)] != words.DefaultPerLanguage || s.Licence == "" {
			t.Errorf("%s: %d examples, licence %q; want %d and a licence", l.Name, perLanguage[int32(k)], s.Licence,
				words.DefaultPerLanguage)
		}
	}
	t.Logf("%d characters: %s", len(data.Vocabulary), string(data.Vocabulary))
	trainSet, heldOut, err := data.Split(1)
	if err != nil {
		t.Fatal(err)
	}
	held := map[int32]int{}
	for _, y := range heldOut.Y {
		held[y]++
	}
	want := int(words.HeldOutFraction * words.DefaultPerLanguage)
	for k, l := range words.Languages {
		if held[int32(k)] != want {
			t.Errorf("%s: %d held out, want %d", l.Name, held[int32(k)], want)
		}
	}
	const batch = 64
	trainDS, heldOutDS, err := data.Datasets(backend.MustNew(), batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := func(ds interface {
		Iter() iter.Seq2[train.Batch, error]
	}) train.Batch {
		for b, err := range ds.Iter() {
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		t.Fatal("empty dataset")
		return train.Batch{}
	}
	b, e := first(trainDS), first(heldOutDS)
	for _, c := range []struct {
		what string
		got  []int
		want []int
	}{
		{"training inputs", b.Inputs[0].Shape().Dimensions, []int{batch, words.Length}},
		{"training labels", b.Labels[0].Shape().Dimensions, []int{batch, 1}},
		{"held-out inputs", e.Inputs[0].Shape().Dimensions, []int{heldOut.N, words.Length}},
	} {
		if len(c.got) != len(c.want) || c.got[0] != c.want[0] || c.got[1] != c.want[1] {
			t.Errorf("%s: dimensions %v, want %v", c.what, c.got, c.want)
		}
	}
	if trainSet.N+heldOut.N != data.Set.N {
		t.Errorf("split into %d + %d of %d examples", trainSet.N, heldOut.N, data.Set.N)
	}
}
