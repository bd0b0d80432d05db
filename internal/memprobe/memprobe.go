// Package memprobe measures the Go heap that a benchmarked step holds: the bytes of heap objects,
// their peak sampled while the step runs under the default collector, and the live peak, sampled
// right after back-to-back collections, which a benchmark reports as the memory the step needs.
package memprobe

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// HeapBytes returns the bytes of live and not-yet-collected heap objects.
func HeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// Settle collects garbage twice: the first collection moves what the backend pooled for reuse
// to the pools' victim caches, the second frees it. Call it before reading a baseline.
func Settle() {
	runtime.GC()
	runtime.GC()
}

// HeapPeak runs step steps times after collecting the garbage already there (what building and
// compiling the step left) and returns the largest heap sampled every 200 µs meanwhile: under the
// default collector (GOGC=100), which lets garbage grow to about the live heap before collecting
// it, the live peak plus up to as much garbage. The sampling goroutine competes with the step for
// the processors, so a benchmark samples untimed steps. It stops at the first error.
func HeapPeak(steps int, step func() error) (uint64, error) {
	runtime.GC()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var largest uint64
		ticker := time.NewTicker(200 * time.Microsecond)
		defer ticker.Stop()
		for {
			largest = max(largest, HeapBytes())
			select {
			case <-stop:
				peak <- largest
				return
			case <-ticker.C:
			}
		}
	}()
	err := run(steps, step)
	close(stop)
	return <-peak, err
}

// LivePeak runs step steps times while another goroutine collects garbage back to back, in
// pairs, and returns the largest heap (live and uncollected objects) read right after a pair:
// the buffers the steps hold. A buffer the backend has freed to its pool for reuse survives one
// collection (in the pool's victim cache) and is released by the next, so the second collection
// of a pair releases what was pooled before the first; Settle first releases what earlier steps
// pooled. It stops at the first error.
func LivePeak(steps int, step func() error) (uint64, error) {
	Settle()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var largest uint64
		for {
			Settle()
			largest = max(largest, HeapBytes())
			select {
			case <-stop:
				peak <- largest
				return
			default:
			}
		}
	}()
	err := run(steps, step)
	close(stop)
	return <-peak, err
}

// run runs step steps times, stopping at the first error.
func run(steps int, step func() error) error {
	for range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
