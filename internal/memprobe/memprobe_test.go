package memprobe

import (
	"testing"
)

// sink keeps the test's allocations reachable while they are measured.
var sink [][]byte

// TestLivePeak checks that the live peak sees a buffer a step holds (64 MiB, above the heap's
// noise) and that StartPeak's sampler sees it too; neither may report less than what is held.
func TestLivePeak(t *testing.T) {
	const size = 64 << 20
	Settle()
	base := HeapBytes()
	sampler := StartPeak()
	live, err := LivePeak(2, func() error {
		sink = append(sink, make([]byte, size))
		return nil
	})
	peak := sampler.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if live < base+2*size {
		t.Errorf("live peak %d bytes, want ≥ %d (baseline %d + the two %d-byte buffers held)", live, base+2*size, base, size)
	}
	if peak < live-size { // the sampler may miss the second buffer's last 200 µs, not the first
		t.Errorf("sampled peak %d bytes, want ≥ %d", peak, live-size)
	}
	sink = nil
}
