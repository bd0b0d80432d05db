package memprobe

import (
	"testing"
	"time"
)

// sink keeps the test's allocations reachable while they are measured.
var sink [][]byte

// TestLivePeak checks that the live peak and the sampled heap peak see the buffers steps hold
// (64 MiB each, above the heap's noise): neither may report less than what is held.
func TestLivePeak(t *testing.T) {
	const size = 64 << 20
	hold := func() error {
		sink = append(sink, make([]byte, size))
		time.Sleep(time.Millisecond) // longer than the sampling period
		return nil
	}
	Settle()
	base := HeapBytes()
	live, err := LivePeak(2, hold)
	if err != nil {
		t.Fatal(err)
	}
	if live < base+2*size {
		t.Errorf("live peak %d bytes, want ≥ %d (baseline %d + the two %d-byte buffers held)", live, base+2*size, base, size)
	}
	peak, err := HeapPeak(2, hold)
	if err != nil {
		t.Fatal(err)
	}
	if peak < base+4*size {
		t.Errorf("sampled peak %d bytes, want ≥ %d (baseline %d + the four %d-byte buffers held)", peak, base+4*size, base, size)
	}
	sink = nil
}
