package main

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// frontEnd is what the check does through a notebook front end, each step a JavaScript function
// evaluated in the notebook's page. The classic Notebook (classicNotebook) is the one implemented
// and tested: Debian packages it (jupyter-notebook), and not JupyterLab. JupyterLab, the
// Dockerfile's front end, fits the same interface through its command registry
// (app.commands.execute of "notebook:clear-all-cell-outputs", "notebook:run-all-cells" and
// "docmanager:save", with its kernel status and cell model read from the notebook panel, and
// .jp-* selectors for outputs); it is not implemented because it cannot be tested here.
type frontEnd interface {
	// path is the page of the notebook name, relative to the server's base URL.
	path(name string) string
	// ready reports that the notebook is loaded and its kernel connected.
	ready() string
	// runAll turns autosave off, clears every output and runs all cells.
	runAll() string
	// busy reports whether a cell is running or queued, or the kernel is not idle.
	busy() string
	// model returns the notebook as nbformat JSON, as the front end holds it.
	model() string
	// save saves the notebook through the server and resolves when it is saved.
	save() string
	// inspect returns a JSON list of pageProblem: images that did not load, MathJax errors, math
	// left as TeX source.
	inspect() string
	// fullPageCSS lets the document grow to its content, for full-page screenshots.
	fullPageCSS() string
}

// pageProblem is one problem inspect found, in the cell of that index (0-based, all cells).
type pageProblem struct {
	Cell    int    `json:"cell"`
	Problem string `json:"problem"`
}

func parseProblems(s string) ([]pageProblem, error) {
	var ps []pageProblem
	if err := json.Unmarshal([]byte(s), &ps); err != nil {
		return nil, fmt.Errorf("page inspection returned %q: %w", s, err)
	}
	return ps, nil
}

// classicNotebook drives the classic Jupyter Notebook (6.x) through its global Jupyter.notebook.
type classicNotebook struct{}

func (classicNotebook) path(name string) string { return "/notebooks/" + url.PathEscape(name) }

func (classicNotebook) ready() string {
	return `() => !!(window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded &&
		Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected() &&
		document.querySelector('#kernel_indicator_icon.kernel_idle_icon'))`
}

func (classicNotebook) runAll() string {
	return `() => {
		Jupyter.notebook.set_autosave_interval(0);
		Jupyter.notebook.clear_all_output();
		Jupyter.notebook.execute_all_cells();
		return true;
	}`
}

func (classicNotebook) busy() string {
	return `() => document.querySelectorAll('.cell.running').length > 0 ||
		!document.querySelector('#kernel_indicator_icon.kernel_idle_icon') ||
		(window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending > 0)`
}

func (classicNotebook) model() string { return `() => JSON.stringify(Jupyter.notebook.toJSON())` }

func (classicNotebook) save() string {
	return `() => Jupyter.notebook.save_notebook().then(() => true)`
}

func (classicNotebook) inspect() string {
	return `() => {
		const out = [];
		Jupyter.notebook.get_cells().forEach((c, i) => {
			const el = c.element[0];
			el.querySelectorAll('.output_area img').forEach(img => {
				if (!img.complete || img.naturalWidth === 0) out.push({cell: i, problem: 'an image did not load'});
			});
			el.querySelectorAll('.MathJax_Error, mjx-merror').forEach(e => {
				out.push({cell: i, problem: 'MathJax error: ' + e.textContent});
			});
			const r = c.cell_type === 'markdown' && el.querySelector('.text_cell_render');
			if (r) {
				const text = r.cloneNode(true);
				text.querySelectorAll('script, code, pre, .MathJax, .MathJax_Display, .MathJax_Preview, .MathJax_CHTML, mjx-container')
					.forEach(n => n.remove());
				const raw = text.textContent.match(/\$\$[^$]+\$\$|\$[^$\s][^$]*\$|\\\([^)]*\\\)|\\\[[^\]]*\\\]/);
				if (raw) out.push({cell: i, problem: 'math not rendered: ' + raw[0]});
			}
		});
		return JSON.stringify(out);
	}`
}

func (classicNotebook) fullPageCSS() string {
	return `html, body, #site { height: auto !important; overflow: visible !important; }`
}
