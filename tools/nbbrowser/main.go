// Command nbbrowser runs every notebook in a real browser, as a reader would: headless Chromium
// (the system's, never a downloaded one) opens each notebook of a running Jupyter server, clears
// its outputs, runs all cells, waits until no cell runs and the kernel is idle, and fails on
//
//   - a JavaScript exception in the page,
//   - an image that did not load, a MathJax error or math left as TeX source,
//   - a code cell that did not run, an error output, or a kind of output (stdout, stderr, a MIME
//     type) the committed notebook has and the page does not.
//
// It saves each notebook through the front end, copies the saved file into -out for nbcheck
// (which fails on panics and failed checks in the text and compares the outputs with the
// committed ones), keeps a full-page screenshot of each in -screenshots, and deletes each
// notebook's session so that its kernel stops. Every problem is reported with its notebook and
// cell (0-based over all cells, as nbcheck counts).
//
// .ci/browser.sh starts the server on a temporary copy of the checkout and runs this command;
// it is a module of its own so that go-rod stays out of the library's dependencies.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

type options struct {
	server, token                       string
	served, committed, out, screenshots string
	chromium, browserPIDFile, only      string
	timeout                             time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.server, "server", "", "base URL of the running Jupyter server, e.g. http://127.0.0.1:8888")
	flag.StringVar(&o.token, "token", "", "the server's token")
	flag.StringVar(&o.served, "served", "", "directory the server serves, holding the notebooks (saved into)")
	flag.StringVar(&o.committed, "committed", "", "directory of the committed notebooks to run (by name), for the kinds of output")
	flag.StringVar(&o.out, "out", "", "directory receiving the executed notebooks, for nbcheck")
	flag.StringVar(&o.screenshots, "screenshots", "", "directory receiving a full-page PNG screenshot per notebook")
	flag.StringVar(&o.chromium, "chromium", "/usr/bin/chromium", "Chromium binary")
	flag.StringVar(&o.browserPIDFile, "browser-pid", "", "file receiving the browser's PID, for the caller's cleanup")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time limit per notebook")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nbbrowser:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	for name, v := range map[string]string{"-server": o.server, "-token": o.token, "-served": o.served,
		"-committed": o.committed, "-out": o.out, "-screenshots": o.screenshots} {
		if v == "" {
			return fmt.Errorf("%s is required", name)
		}
	}
	names, err := filepath.Glob(filepath.Join(o.committed, "*.ipynb"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, dir := range []string{o.out, o.screenshots} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}

	l := launcher.New().Bin(o.chromium).Headless(true).Leakless(false).NoSandbox(os.Geteuid() == 0).
		Set("disable-gpu").Set("window-size", "1280,900")
	controlURL, err := l.Launch()
	if err != nil {
		return fmt.Errorf("starting %s: %w", o.chromium, err)
	}
	defer l.Cleanup()
	defer l.Kill()
	if o.browserPIDFile != "" {
		if err := os.WriteFile(o.browserPIDFile, []byte(strconv.Itoa(l.PID())+"\n"), 0o644); err != nil {
			return err
		}
	}
	browser := rod.New().ControlURL(controlURL).Context(ctx)
	if err := browser.Connect(); err != nil {
		return fmt.Errorf("connecting to the browser: %w", err)
	}
	defer browser.Close()

	var problems []string
	for _, path := range names {
		name := filepath.Base(path)
		start := time.Now()
		ps, err := runNotebook(ctx, browser, classicNotebook{}, o, name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
		}
		problems = append(problems, ps...)
		status := "ok"
		if err != nil || len(ps) > 0 {
			status = "FAILED"
		}
		fmt.Printf("%-28s %-6s %5.0f s in the browser\n", name, status, time.Since(start).Seconds())
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no notebooks in %s", o.committed)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) in the browser", len(problems))
	}
	return nil
}

// runNotebook runs one notebook in a new page and returns its problems, each naming the notebook
// and cell; the error is for a notebook the check could not run at all.
func runNotebook(ctx context.Context, browser *rod.Browser, fe frontEnd, o options, name string) (problems []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	defer func() {
		if e := deleteSession(o, name); e != nil && err == nil {
			err = e
		}
	}()
	page, err := browser.Context(ctx).Page(proto.TargetCreateTarget{})
	if err != nil {
		return nil, err
	}
	defer page.Close()
	if err := page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 900, DeviceScaleFactor: 1}); err != nil {
		return nil, err
	}
	if err := (proto.RuntimeEnable{}).Call(page); err != nil {
		return nil, err
	}
	exceptions := make(chan string, 100)
	go page.EachEvent(func(e *proto.RuntimeExceptionThrown) {
		msg := e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
			msg += " " + ex.Description
		}
		select {
		case exceptions <- msg:
		default:
		}
	})()
	if err := page.Navigate(o.server + fe.path(name) + "?token=" + o.token); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, page, fe.ready(), true); err != nil {
		return nil, fmt.Errorf("the notebook did not load with its kernel connected: %w", err)
	}
	if _, err := page.Eval(fe.runAll()); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, page, fe.busy(), false); err != nil {
		return nil, fmt.Errorf("cells still running: %w", err)
	}

	label := func(cell int, what string) string {
		if cell < 0 {
			return fmt.Sprintf("%s: %s", name, what)
		}
		return fmt.Sprintf("%s: cell %d: %s", name, cell, what)
	}
	res, err := page.Eval(fe.inspect())
	if err != nil {
		return nil, err
	}
	inPage, err := parseProblems(res.Value.Str())
	if err != nil {
		return nil, err
	}
	res, err = page.Eval(fe.model())
	if err != nil {
		return nil, err
	}
	committed, err := os.ReadFile(filepath.Join(o.committed, name))
	if err != nil {
		return nil, err
	}
	missing, err := compareKinds(committed, []byte(res.Value.Str()))
	if err != nil {
		return nil, err
	}
	for _, p := range append(inPage, missing...) {
		problems = append(problems, label(p.Cell, p.Problem))
	}

	if _, err := page.Eval(fe.save()); err != nil {
		return problems, fmt.Errorf("saving: %w", err)
	}
	saved, err := os.ReadFile(filepath.Join(o.served, name))
	if err != nil {
		return problems, err
	}
	if err := os.WriteFile(filepath.Join(o.out, name), saved, 0o644); err != nil {
		return problems, err
	}
	if err := screenshot(page, fe, filepath.Join(o.screenshots, strings.TrimSuffix(name, ".ipynb")+".png")); err != nil {
		return problems, err
	}
	for len(exceptions) > 0 {
		problems = append(problems, label(-1, "JavaScript exception: "+<-exceptions))
	}
	return problems, nil
}

// waitFor polls the JavaScript predicate js until it returns want three times in a row, a
// second apart (a notebook passes through short idle moments between cells).
func waitFor(ctx context.Context, page *rod.Page, js string, want bool) error {
	streak := 0
	for streak < 3 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		res, err := page.Eval(js)
		if err != nil {
			return err
		}
		if res.Value.Bool() == want {
			streak++
		} else {
			streak = 0
		}
	}
	return nil
}

// screenshot lets the notebook grow to its content and saves a full-page PNG.
func screenshot(page *rod.Page, fe frontEnd, path string) error {
	if _, err := page.Eval(`css => { const s = document.createElement('style'); s.textContent = css; document.head.appendChild(s); return true }`,
		fe.fullPageCSS()); err != nil {
		return err
	}
	png, err := page.Screenshot(true, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return os.WriteFile(path, png, 0o644)
}
