// Command fetch builds the Cars196 feature cache of the paper's head-optimisation experiment
// (appendix F.2): every image of the canonical Stanford Cars split (8,144 train, 8,041 test)
// goes once through a frozen ImageNet-pretrained torchvision ResNet-50 with the matching
// torchvision transform, and the 2048-d average-pooled pre-classifier features are written
// with their labels as .npy files plus a JSON manifest (see package features).
//
// Usage:
//
//	go run ./data/fetch --data DIR --out DIR [--weights FILE|URL] [--weights-version V1|V2]
//	    [--batch N] [--download [--mirror URL]]
//
// See data/fetch/README.md for where to put the dataset, the weight files and their checksums.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/data/fetch/cars"
	"github.com/fgn-paper/fgn/data/fetch/download"
	"github.com/fgn-paper/fgn/data/fetch/resnet"
	"github.com/fgn-paper/fgn/data/fetch/transform"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
	"github.com/fgn-paper/fgn/internal/filehash"
)

// weightSet is a published set of torchvision ResNet-50 weights and its transform.
type weightSet struct {
	name      string
	url       string
	transform transform.Spec
}

// The torchvision ResNet-50 ImageNet weights. torchvision names its files <arch>-<first 8 hex
// digits of the sha256>.pth and checks that prefix; no full checksum is published.
var weightSets = map[string]weightSet{
	"V1": {"torchvision ResNet50_Weights.IMAGENET1K_V1", "https://download.pytorch.org/models/resnet50-0676ba61.pth", transform.ImageNetV1},
	"V2": {"torchvision ResNet50_Weights.IMAGENET1K_V2", "https://download.pytorch.org/models/resnet50-11ad3fa6.pth", transform.ImageNetV2},
}

// torchvisionHash matches torchvision's weight file names, capturing the sha256 prefix.
var torchvisionHash = regexp.MustCompile(`-([0-9a-f]{8,})\.pth$`)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(cli.Exit(run(ctx, os.Args[1:], os.Stderr), os.Stderr, "fetch"))
}

type config struct {
	data, out, weights, version, weightsDir, mirror string
	batch, chunk                                    int
	download                                        bool
}

func run(ctx context.Context, args []string, log io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by cli.Exit
	userCache, _ := os.UserCacheDir()
	fs.StringVar(&cfg.data, "data", "cars196", "Stanford Cars directory in torchvision's layout (or its parent holding stanford_cars/)")
	fs.StringVar(&cfg.out, "out", "data/cars196", "feature cache directory to write")
	fs.StringVar(&cfg.weights, "weights", "", "ResNet-50 weight file (.pth or .safetensors) or URL; default: the torchvision URL of --weights-version")
	fs.StringVar(&cfg.version, "weights-version", "V2", "torchvision weights the file holds, V1 (IMAGENET1K_V1) or V2 (IMAGENET1K_V2); selects the transform")
	fs.StringVar(&cfg.weightsDir, "weights-dir", filepath.Join(userCache, "fgn", "weights"), "where downloaded weight files are kept")
	fs.IntVar(&cfg.batch, "batch", 8, "images per forward pass (8 is fastest on the pure-Go backend here; use e.g. 64 on a GPU)")
	fs.IntVar(&cfg.chunk, "chunk", 256, "images per resumable chunk file")
	fs.BoolVar(&cfg.download, "download", false, "download missing dataset files (checksum-verified) into --data")
	fs.StringVar(&cfg.mirror, "mirror", "", "base URL serving cars_train.tgz, cars_test.tgz, car_devkit.tgz and cars_test_annos_withlabels.mat (with --download)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(log, "usage: go run ./data/fetch [flags]   (data/fetch/README.md)\n\nflags:")
			fs.SetOutput(log)
			fs.PrintDefaults()
			return err
		}
		return cli.Usagef("%v (-help lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q", fs.Args())
	}
	ws, ok := weightSets[strings.ToUpper(cfg.version)]
	if !ok {
		return cli.Usagef("--weights-version %q: want V1 or V2", cfg.version)
	}
	if cfg.batch < 1 || cfg.chunk < 1 {
		return cli.Usagef("--batch and --chunk must be positive")
	}

	b, err := backend.New()
	if err != nil {
		return cli.ConfigError{Err: err}
	}
	fmt.Fprintln(log, "backend:", backend.Describe(b))
	if w := backend.SIMDWarning(b); w != "" {
		fmt.Fprintln(log, w)
	}

	source := "Stanford Cars (Cars196, Krause et al. 3DRR 2013), canonical split, torchvision layout"
	if cfg.download {
		urls, err := downloadDataset(ctx, cfg, log)
		if err != nil {
			return err
		}
		source += ", downloaded from " + strings.Join(urls, ", ")
	}
	root := cars.ResolveRoot(cfg.data)
	ds, err := cars.Load(root)
	if err != nil {
		return fmt.Errorf("%w\n  (put the dataset in torchvision's layout under %s, see data/fetch/README.md, or use --download)", err, cfg.data)
	}
	if abs, err := filepath.Abs(root); err == nil {
		source += " at " + abs
	}
	fmt.Fprintf(log, "dataset: %s: %d classes, %d train, %d test images\n", root, len(ds.ClassNames), len(ds.Train), len(ds.Test))
	if len(ds.Train) != cars.TrainCount || len(ds.Test) != cars.TestCount || len(ds.ClassNames) != cars.Classes {
		fmt.Fprintf(log, "note: not the canonical %d/%d images of %d classes\n", cars.TrainCount, cars.TestCount, cars.Classes)
	}

	mw, weights, err := loadWeights(ctx, cfg, ws, log)
	if err != nil {
		return err
	}
	model, err := resnet.New(b, weights, resnet.ConvAuto)
	if err != nil {
		return fmt.Errorf("weight file %s: %w", mw.File, err)
	}
	if !model.Arch.IsResNet50() {
		fmt.Fprintf(log, "note: the weights are a %s, not ResNet-50\n", model.Arch)
	}
	ex := &extractor{model: model, spec: ws.transform, batch: cfg.batch, chunk: cfg.chunk, log: log}
	m := &features.Manifest{
		Source:    source,
		Weights:   mw,
		Model:     model.Arch.String() + "; frozen, inference mode (batch norm with running statistics), global-average-pooled pre-classifier features",
		Transform: ws.transform.String() + "; JPEGs decoded by Go's image/jpeg, grey-scale and CMYK converted to RGB as PIL does",
		Backend:   backend.Describe(b),
		Splits:    map[string]features.Split{},
		Created:   time.Now().UTC().Format(time.RFC3339),
	}
	return ex.run(ctx, ds, cfg.out, m)
}

// loadWeights resolves --weights (a file, a URL or the default URL), verifies what can be
// verified and reads the state dict.
func loadWeights(ctx context.Context, cfg config, ws weightSet, log io.Writer) (features.ManifestWeights, resnet.Weights, error) {
	src := cfg.weights
	if src == "" {
		src = ws.url
	}
	mw := features.ManifestWeights{Name: ws.name}
	var path, sha string
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		f := download.File{URL: src, Name: filepath.Base(src)}
		if m := torchvisionHash.FindStringSubmatch(f.Name); m != nil {
			f.SHA256Prefix = m[1]
		}
		fmt.Fprintf(log, "weights: %s (verifying %s)\n", src, f.Verified())
		var err error
		if path, sha, err = download.Get(ctx, f, cfg.weightsDir, download.Options{Progress: log}); err != nil {
			return mw, nil, err
		}
		mw.URL = src
	} else {
		path = src
		var err error
		if sha, err = filehash.SHA256(path); err != nil {
			return mw, nil, fmt.Errorf("weight file: %w", err)
		}
		if m := torchvisionHash.FindStringSubmatch(filepath.Base(path)); m != nil && !strings.HasPrefix(sha, m[1]) {
			return mw, nil, fmt.Errorf("weight file %s has sha256 %s, but its torchvision name says it starts with %s: "+
				"the file is corrupt or truncated; download %s again", path, sha, m[1], ws.url)
		}
	}
	// A torchvision file name fixes the weight set; it must agree with --weights-version.
	for v, other := range weightSets {
		if filepath.Base(other.url) == filepath.Base(path) && other.name != ws.name {
			return mw, nil, fmt.Errorf("%s holds %s weights but --weights-version is %s: pass --weights-version %s", path, other.name, cfg.version, v)
		}
	}
	mw.File, mw.SHA256 = filepath.Base(path), sha
	if filepath.Base(path) != filepath.Base(ws.url) {
		mw.Name += " (as declared by --weights-version; the file is not identified by its name)"
	}
	fmt.Fprintf(log, "weights: %s, sha256 %s (%s)\n", path, sha, ws.name)
	w, err := resnet.LoadFile(path)
	return mw, w, err
}

// The canonical dataset files, as torchvision's StanfordCars downloaded them, with
// torchvision's md5 checksums. The original Stanford server no longer serves them; the devkit
// is also attached to torchvision issue 7545 by its maintainers.
var datasetFiles = []struct {
	file    download.File
	extract bool
}{
	{download.File{URL: "https://github.com/pytorch/vision/files/11644847/car_devkit.tgz", Name: "car_devkit.tgz", MD5: "c3b158d763b6e2245038c8ad08e45376"}, true},
	{download.File{URL: "https://ai.stanford.edu/~jkrause/car196/cars_train.tgz", Name: "cars_train.tgz", MD5: "065e5b463ae28d29e77c1b4b166cfe61"}, true},
	{download.File{URL: "https://ai.stanford.edu/~jkrause/car196/cars_test.tgz", Name: "cars_test.tgz", MD5: "4ce7ebf6a94d07f1952d94dd34c4d501"}, true},
	{download.File{URL: "https://ai.stanford.edu/~jkrause/car196/cars_test_annos_withlabels.mat", Name: "cars_test_annos_withlabels.mat", MD5: "b0a2b23655a3edd16d84508592a98d10"}, false},
}

// extractedAs is the directory a dataset archive unpacks to.
var extractedAs = map[string]string{"car_devkit.tgz": "devkit", "cars_train.tgz": cars.TrainDir, "cars_test.tgz": cars.TestDir}

// downloadDataset fetches and unpacks the dataset files that are missing from cfg.data.
func downloadDataset(ctx context.Context, cfg config, log io.Writer) ([]string, error) {
	root := cars.ResolveRoot(cfg.data)
	var urls []string
	for _, df := range datasetFiles {
		f := df.file
		if cfg.mirror != "" {
			f.URL = strings.TrimSuffix(cfg.mirror, "/") + "/" + f.Name
		}
		target := filepath.Join(root, f.Name)
		if df.extract {
			target = filepath.Join(root, extractedAs[f.Name])
		}
		if _, err := os.Stat(target); err == nil {
			continue
		}
		fmt.Fprintf(log, "dataset: downloading %s (verifying %s)\n", f.URL, f.Verified())
		path, _, err := download.Get(ctx, f, root, download.Options{Progress: log})
		if err != nil {
			return nil, err
		}
		urls = append(urls, f.URL)
		if df.extract {
			fmt.Fprintf(log, "dataset: extracting %s\n", path)
			if err := download.ExtractTarGz(path, root); err != nil {
				return nil, err
			}
		}
	}
	return urls, nil
}
