package train

import (
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
)

func TestEstimateMemory(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                          string
		cfg                           Config
		n, nEval, dim, classes        int
		data, state, step, evaluation int64
	}{
		{
			// b=512, d=2048, C=32768, one batch, FGN (closed-form Gram): P = 2048·32768 + 32768.
			name: "FGN, affine, C=32768", cfg: Config{Method: method.FGN, BatchSize: 512},
			n: 512, nEval: 256, dim: 2048, classes: 32768,
			data:       4*(2*768*2048+512*2048) + 4*512*2048 + 4*512*512,
			state:      4 * 3 * (2048*32768 + 32768),
			step:       4*6*512*32768 + 64*mib,
			evaluation: 512*(4*4*32768+32768) + 4*(2048*32768+32768),
		},
		{
			// Adam on 1000 examples in batches of 300 (4 batches), d=64, C=10.
			name: "Adam, affine", cfg: Config{Method: method.Adam, BatchSize: 300},
			n: 1000, nEval: 2000, dim: 64, classes: 10,
			data:       4*(2*3000*64+1000*64) + 4*1000*64,
			state:      4 * 6 * (64*10 + 10),
			step:       4*6*300*10 + 64*mib,
			evaluation: 2000*(4*4*10+10) + 4*(64*10+10),
		},
		{
			// FGN (closed-form Gram)'s feature Grams: ⌈1000/300⌉ = 4 batches of 300×300.
			name: "FGN, affine, 4 batches", cfg: Config{Method: method.FGN, BatchSize: 300},
			n: 1000, nEval: 2000, dim: 64, classes: 10,
			data:       4*(2*3000*64+1000*64) + 4*1000*64 + 4*4*300*300,
			state:      4 * 3 * (64*10 + 10),
			step:       4*6*300*10 + 64*mib,
			evaluation: 2000*(4*4*10+10) + 4*(64*10+10),
		},
		{
			// SGN on an MLP (hidden 32): P = 64·32 + 32 + 32·10 + 10; no layouts; the batch
			// larger than the data is the data.
			name: "SGN, mlp", cfg: Config{Method: method.SGN, BatchSize: 4096, Model: Model{Hidden: 32}},
			n: 100, nEval: 50, dim: 64, classes: 10,
			data:       4 * (2*150*64 + 100*64),
			state:      4 * (10 + 2) * (64*32 + 32 + 32*10 + 10),
			step:       4*6*100*(10+32) + 64*mib,
			evaluation: 100*(4*4*(10+32)+10) + 4*(64*32+32+32*10+10),
		},
		{
			name: "FGN (matrix-free), affine", cfg: Config{Method: method.FGNMatrixFree, BatchSize: 10},
			n: 10, nEval: 10, dim: 8, classes: 3,
			data:       4*(2*20*8+10*8) + 4*10*8,
			state:      4 * 4 * (8*3 + 3),
			step:       4*6*10*3 + 64*mib,
			evaluation: 10*(4*4*3+3) + 4*(8*3+3),
		},
	} {
		e := EstimateMemory(tc.cfg, tc.n, tc.nEval, tc.dim, tc.classes)
		want := MemoryEstimate{Data: tc.data, State: tc.state, Step: tc.step, Evaluation: tc.evaluation}
		if e != want {
			t.Errorf("%s: EstimateMemory = %+v, want %+v", tc.name, e, want)
		}
		if sum := tc.data + tc.state + tc.step + tc.evaluation; e.Total() != sum {
			t.Errorf("%s: Total = %d, want %d", tc.name, e.Total(), sum)
		}
	}
}

func TestCheckMemory(t *testing.T) {
	cfg := Config{Method: method.FGN, BatchSize: 512}
	total := EstimateMemory(cfg, 512, 256, 2048, 32768).Total()
	if err := checkMemory(cfg, 512, 256, 2048, 32768, total); err != nil {
		t.Errorf("an estimate equal to the available memory is refused: %v", err)
	}
	err := checkMemory(cfg, 512, 256, 2048, 32768, total-1)
	if err == nil {
		t.Fatalf("an estimate of %d bytes with %d available is not refused", total, total-1)
	}
	for _, want := range []string{"FGN (closed-form Gram)", "batch 512", "d=2048, C=32768", "needs an estimated 1.",
		"GiB available on this machine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
}

func TestMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meminfo string
		want    int64
		ok      bool
	}{
		{"Linux", "MemTotal:       24576000 kB\nMemFree:        20000000 kB\nMemAvailable:   21000000 kB\n", 21000000 << 10, true},
		{"no MemAvailable (Linux < 3.14)", "MemTotal:       24576000 kB\nMemFree:        20000000 kB\n", 0, false},
		{"not a number", "MemAvailable:   lots kB\n", 0, false},
		{"empty", "", 0, false},
	} {
		got, ok := memAvailable(strings.NewReader(tc.meminfo))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: memAvailable = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
