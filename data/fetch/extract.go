package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/fgn-paper/fgn/data/fetch/cars"
	"github.com/fgn-paper/fgn/data/fetch/resnet"
	"github.com/fgn-paper/fgn/data/fetch/transform"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/internal/atomicfile"
	"github.com/fgn-paper/fgn/internal/progress"
)

// partialDir holds the finished chunks of an unfinished extraction, under the cache directory.
const partialDir = ".partial"

// extractor runs images through the model in batches and writes the cache.
type extractor struct {
	model        *resnet.Model
	spec         transform.Spec
	batch, chunk int
	log          io.Writer
}

// fingerprint identifies what the chunks in partialDir were computed from; chunks of another
// configuration are discarded.
type fingerprint struct {
	Weights   string         `json:"weights_sha256"`
	Transform string         `json:"transform"`
	Model     string         `json:"model"`
	Root      string         `json:"dataset_root"`
	Counts    map[string]int `json:"counts"`
	Chunk     int            `json:"chunk"`
}

// run extracts both splits chunk by chunk (each chunk file is written atomically and reused by
// a later run), then writes the split files and finally the manifest.
func (e *extractor) run(ctx context.Context, ds *cars.Dataset, out string, m *features.Manifest) error {
	splits := []string{"train", "test"}
	fp := fingerprint{Weights: m.Weights.SHA256, Transform: e.spec.String(), Model: e.model.Arch.String(),
		Root: ds.Root, Counts: map[string]int{"train": len(ds.Train), "test": len(ds.Test)}, Chunk: e.chunk}
	pdir := filepath.Join(out, partialDir)
	if err := e.preparePartial(pdir, fp); err != nil {
		return err
	}
	// Plan the chunks, reusing those an interrupted run finished.
	type chunk struct {
		examples []cars.Example
		start    int
		fx, fy   string
		set      *features.Set
	}
	plan := map[string][]*chunk{}
	remaining := 0
	for _, split := range splits {
		examples, _ := ds.Split(split)
		for c, start := 0, 0; start < len(examples); c, start = c+1, start+e.chunk {
			ch := &chunk{examples: examples[start:min(start+e.chunk, len(examples))], start: start}
			ch.fx, ch.fy = features.CachePaths(pdir, fmt.Sprintf("%s-%05d", split, c))
			if s, err := features.Load(ch.fx, ch.fy); err == nil && s.N == len(ch.examples) && s.D == e.model.Arch.FeatureDim {
				ch.set = s
			} else {
				remaining += len(ch.examples)
			}
			plan[split] = append(plan[split], ch)
		}
	}
	bar := progress.New(e.log, int64(remaining), progress.Options{Description: "features (images)", ETA: true})
	sets := map[string]*features.Set{}
	for _, split := range splits {
		all := &features.Set{D: e.model.Arch.FeatureDim}
		for _, ch := range plan[split] {
			if ch.set == nil {
				s, err := e.extractChunk(ctx, split, ch.examples, ch.start, bar)
				if err != nil {
					return err
				}
				if err := s.Save(ch.fx, ch.fy); err != nil {
					return err
				}
				ch.set = s
			}
			all.N += ch.set.N
			all.X = append(all.X, ch.set.X...)
			all.Y = append(all.Y, ch.set.Y...)
		}
		sets[split] = all
	}
	// The manifest marks a complete cache: remove a previous one before replacing the files.
	if err := os.Remove(filepath.Join(out, features.ManifestName)); err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, split := range splits {
		if err := sets[split].Save(features.CachePaths(out, split)); err != nil {
			return err
		}
		m.Splits[split] = features.Split{Examples: sets[split].N, Features: sets[split].D, Classes: len(ds.ClassNames)}
	}
	if err := features.WriteManifest(out, m); err != nil {
		return err
	}
	if err := os.RemoveAll(pdir); err != nil {
		return err
	}
	fmt.Fprintf(e.log, "wrote %s: train %d×%d, test %d×%d, manifest %s\n", out, sets["train"].N, sets["train"].D,
		sets["test"].N, sets["test"].D, features.ManifestName)
	return nil
}

// preparePartial keeps the chunks of an interrupted run with the same fingerprint and discards
// any others.
func (e *extractor) preparePartial(pdir string, fp fingerprint) error {
	want, _ := json.Marshal(fp) // plain strings and ints always marshal
	have, err := os.ReadFile(filepath.Join(pdir, "fingerprint.json"))
	if err == nil && string(have) == string(want) {
		fmt.Fprintf(e.log, "resuming: reusing finished chunks in %s\n", pdir)
		return nil
	}
	if err == nil {
		fmt.Fprintf(e.log, "discarding chunks of a different configuration in %s\n", pdir)
	}
	if err := os.RemoveAll(pdir); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(pdir, "fingerprint.json"), func(w io.Writer) error {
		_, err := w.Write(want)
		return err
	})
}

// prepared is one transformed batch.
type prepared struct {
	images []float32
	err    error
}

// extractChunk runs the examples through the model in batches; batch i+1 is decoded and
// transformed (in parallel over its images) while the model runs batch i. A short last batch
// is padded to the batch size so that one compiled graph serves every batch.
func (e *extractor) extractChunk(ctx context.Context, split string, examples []cars.Example, offset int, bar *progress.Bar) (*features.Set, error) {
	crop := e.spec.CropSize
	per := 3 * crop * crop
	batches := make(chan prepared, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(batches)
		for start := 0; start < len(examples); start += e.batch {
			end := min(start+e.batch, len(examples))
			p := prepared{images: make([]float32, e.batch*per)}
			p.err = e.prepare(examples[start:end], offset+start, split, p.images, per)
			select {
			case batches <- p:
			case <-ctx.Done():
				return
			}
			if p.err != nil {
				return
			}
		}
	}()
	s := &features.Set{N: len(examples), Y: make([]int32, len(examples))}
	for i, ex := range examples {
		s.Y[i] = int32(ex.Label)
	}
	done := 0
	for p := range batches {
		if p.err != nil {
			return nil, p.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		feats, err := e.model.Features(p.images, e.batch, crop, crop)
		if err != nil {
			return nil, err
		}
		n := min(e.batch, len(examples)-done)
		s.D = e.model.Arch.FeatureDim
		s.X = append(s.X, feats[:n*s.D]...)
		done += n
		bar.Add(int64(n))
	}
	if done != len(examples) {
		return nil, fmt.Errorf("extraction of %s stopped after %d of %d images", split, done, len(examples))
	}
	return s, nil
}

// prepare decodes and transforms examples into dst (per values each), in parallel.
func (e *extractor) prepare(examples []cars.Example, offset int, split string, dst []float32, per int) error {
	errs := make([]error, len(examples))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, ex := range examples {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			data, err := os.ReadFile(ex.Path)
			if err == nil {
				var img *transform.RGB
				if img, err = transform.DecodeJPEG(data); err == nil {
					err = e.spec.Apply(img, dst[i*per:(i+1)*per])
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s image %d (%s): %w", split, offset+i+1, ex.Path, err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
