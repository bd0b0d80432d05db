package train

import (
	"fmt"
	"math/rand/v2"
)

// StaticBatches returns the batches of the paper's protocol (app. F.2): the n examples are
// shuffled once with the seed, cut into ⌈n/size⌉ consecutive batches of exactly size examples,
// and the last batch is padded by wrapping around to the start of the shuffled order. An epoch
// (one pass over the batches) sees every example exactly once plus ⌈n/size⌉·size − n padding
// examples, the first of the shuffled order, seen twice; no example is dropped, and the batches
// are the same in every epoch (no reshuffle).
func StaticBatches(n, size int, seed uint64) ([][]int, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("no training examples")
	case size < 1:
		return nil, fmt.Errorf("batch size must be ≥ 1, got %d", size)
	case size > n:
		return nil, fmt.Errorf("batch size %d is larger than the %d training examples", size, n)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5eed_0f_ba7c4e5)).Perm(n)
	numBatches := (n + size - 1) / size
	batches := make([][]int, numBatches)
	for k := range batches {
		batches[k] = make([]int, size)
		for j := range size {
			batches[k][j] = perm[(k*size+j)%n]
		}
	}
	return batches, nil
}
