// Command pjrt-install installs the CUDA PJRT plugin and the NVIDIA libraries it needs with
// go-xla's installer (github.com/gomlx/go-xla/installer), at a pinned version, so that an image
// built without a visible GPU (where go-xla's auto-install does nothing) still has the plugin.
// The wheels come from pypi.org; the installer checks their sha256 against pypi's.
//
//	pjrt-install -plugin cuda13 -version 0.8.0 -path /usr/local/lib/go-xla
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gomlx/go-xla/installer"
)

func main() {
	plugin := flag.String("plugin", "cuda13", "CUDA PJRT flavour: cuda13 or cuda12 (the jax-<plugin>-pjrt wheel)")
	version := flag.String("version", "", "jax-<plugin>-pjrt version to install (required; no \"latest\": pin it)")
	path := flag.String("path", "/usr/local/lib/go-xla", "go-xla library directory; the plugin goes under <path>/nvidia")
	flag.Parse()
	if err := install(*plugin, *version, *path); err != nil {
		fmt.Fprintln(os.Stderr, "pjrt-install:", err)
		os.Exit(1)
	}
}

func install(plugin, version, path string) error {
	if plugin != "cuda13" && plugin != "cuda12" {
		return fmt.Errorf("unknown plugin %q (want cuda13 or cuda12)", plugin)
	}
	if version == "" || version == "latest" {
		return fmt.Errorf("-version must name a pinned jax-%s-pjrt version, got %q", plugin, version)
	}
	return installer.CudaInstall(plugin, version, path, false, installer.Normal)
}
