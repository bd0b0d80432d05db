package report

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"golang.org/x/sys/cpu"

	"github.com/fgn-paper/fgn/fgn/backend"
)

// Provenance adds the comments every experiment table carries: backend, device, build,
// profile, command and date.
func Provenance(t *Table, be compute.Backend, profile, command string, now time.Time) {
	t.Comment("backend", backend.Describe(be))
	t.Comment("device", Device())
	simd := "GOEXPERIMENT=simd build"
	if !backend.SIMDBuild {
		simd = "built without GOEXPERIMENT=simd"
	}
	t.Comment("build", fmt.Sprintf("%s, %s", runtime.Version(), simd))
	t.Comment("profile", profile)
	t.Comment("command", command)
	t.Comment("date", now.UTC().Format(time.RFC3339))
}

// Device describes the host: CPU model (from /proc/cpuinfo where available), number of
// logical CPUs, AVX-512 support, OS and architecture.
func Device() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	simd := ""
	if cpu.X86.HasAVX512F {
		simd = ", AVX-512"
	} else if cpu.X86.HasAVX2 {
		simd = ", AVX2"
	}
	return fmt.Sprintf("%s, %d logical CPUs%s (%s/%s)", model, runtime.NumCPU(), simd, runtime.GOOS, runtime.GOARCH)
}

// LoadAverage returns the host's 1-, 5- and 15-minute load averages (from /proc/loadavg), or
// "unknown" where they cannot be read. Timings taken on a shared host record it.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
