package zoo

import (
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/dataset"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/data/words"
)

// Task is a classification task of the zoo and its data, as GoMLX datasets.
type Task struct {
	Name    string
	Classes int
	// Describe says what an example is, in tables' headers.
	Describe string
	// load returns the training and held-out datasets for a batch size and seed
	// (digits.Datasets, words.Data.Datasets).
	load func(be compute.Backend, batch int, seed uint64) (trainDS, heldOutDS *dataset.InMemoryDataset, err error)
	// params returns the hyper-parameters that the task's models read from their scope.
	params func() (map[string]any, error)
}

// ParamVocabulary is the scope hyper-parameter from which the word models read the size of the
// character vocabulary (words.Data.VocabularySize), as GoMLX's imdb example reads its vocabulary.
const ParamVocabulary = "zoo_vocabulary_size"

var (
	// Digits is data/digits: 8×8 images as 64 standardised pixels, 10 classes, 1437 training and
	// 360 held-out images.
	Digits = &Task{Name: "digits", Classes: digits.Classes, Describe: "UCI digits, 64 standardised pixels",
		load:   digits.Datasets,
		params: func() (map[string]any, error) { return nil, nil }}
	// DigitsUnitRange is data/digits with the pixels scaled to [−1, 1] (digits.UnitRangeDatasets),
	// as GoMLX's cifar example scales its images for its KAN model.
	DigitsUnitRange = &Task{Name: "digits-unit-range", Classes: digits.Classes,
		Describe: "UCI digits, 64 pixels scaled to [−1, 1]", load: digits.UnitRangeDatasets,
		params: func() (map[string]any, error) { return nil, nil }}
	// Words is data/words at its default size: words of 20 languages as words.Length character
	// ids, 4000 training and 1000 held-out words.
	Words = &Task{Name: "words", Classes: len(words.Languages), Describe: "hunspell words, 16 character ids",
		load: func(be compute.Backend, batch int, seed uint64) (*dataset.InMemoryDataset, *dataset.InMemoryDataset, error) {
			data, err := loadWords()
			if err != nil {
				return nil, nil, err
			}
			return data.Datasets(be, batch, seed)
		},
		params: func() (map[string]any, error) {
			data, err := loadWords()
			if err != nil {
				return nil, err
			}
			return map[string]any{ParamVocabulary: data.VocabularySize()}, nil
		}}
)

// loadWords loads data/words once per process.
var loadWords = sync.OnceValues(func() (*words.Data, error) { return words.Load(words.DefaultPerLanguage) })
