package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/console.css static/console.js
var staticFS embed.FS

// pages are the parsed templates, one per page (each the layout, the
// shared parts and the page's own "content").
type pages struct {
	byName map[string]*template.Template
	asset  string // a hash of the static files: their URLs' ?v=, so a new build is never a stale cache
}

var funcs = template.FuncMap{
	"rfc3339":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"human":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"sessionPath": sessionPath,
	"turnPath":    turnPath,
	"runPath":     runPath,
	"workflowPath": func(id string) string {
		return Prefix + "workflows/" + seg(id)
	},
	"seg":     seg,
	"bytes":   humanBytes,
	"clip":    clip,
	"cost":    costText,
	"costOf":  func(c *contracts.Cost) string { return costOne(c) },
	"lower":   strings.ToLower,
	"subtree": newSubtree,
	"terminal": func(p contracts.Phase) bool {
		return p.Terminal()
	},
}

func loadPages() *pages {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err) // a constant pattern
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range names {
		file := path.Base(name)
		if file == "layout.html" || file == "parts.html" {
			continue
		}
		t := template.Must(base.Clone())
		template.Must(t.ParseFS(templateFS, name))
		p.byName[strings.TrimSuffix(file, ".html")] = t
	}
	h := sha256.New()
	for _, f := range []string{"static/console.css", "static/console.js"} {
		b, _ := staticFS.ReadFile(f)
		h.Write(b)
	}
	p.asset = hex.EncodeToString(h.Sum(nil))[:12]
	return p
}

// frame is what the layout of every page shows.
type frame struct {
	Title string
	Nav   string // the current section: sessions, approvals, workflows, schedules, usage
	Who   contracts.Principal
	Done  bool   // <body data-done="true">: a turn page whose turn has ended
	Asset string // set by render
}

// framed is a page's data: it has a frame.
type framed interface{ base() *frame }

func (f *frame) base() *frame { return f }

// render writes page name with data and status; the page is built whole
// first, so a template error is a clean 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data framed) {
	t, ok := c.pages.byName[name]
	if !ok {
		panic("console: no page " + name)
	}
	data.base().Asset = c.pages.asset
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		c.log.ErrorContext(r.Context(), "rendering a console page failed", "page", name, "error", err)
		if name != "error" {
			c.errorPage(w, r, http.StatusInternalServerError, "internal", "The console failed to render this page.")
		} else {
			http.Error(w, "the console failed to render its error page", http.StatusInternalServerError)
		}
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	frame
	Status  int
	Code    string
	Message string
}

// errorPage shows an error: the status, the API's code and its message.
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	title := http.StatusText(status)
	if status == http.StatusNotFound {
		title = "Not found"
	}
	c.render(w, r, status, "error", &errorData{frame: frame{Title: title}, Status: status, Code: code, Message: msg})
}

// staticFiles serves the embedded CSS and JavaScript (their URLs carry
// the build's hash, so they may be cached).
func staticFiles() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, Prefix+"static/")
		var ctype string
		switch name {
		case "console.css":
			ctype = "text/css; charset=utf-8"
		case "console.js":
			ctype = "text/javascript; charset=utf-8"
		default:
			http.NotFound(w, r)
			return
		}
		b, err := staticFS.ReadFile("static/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(b)
	}
}

func humanBytes(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// clip cuts s to at most n bytes on a rune boundary, with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// costText is a cost by currency ("USD 0.0123, EUR 0.5"), "—" for none.
func costText(m map[string]float64) string {
	if len(m) == 0 {
		return "—"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + amount(m[k])
	}
	return strings.Join(parts, ", ")
}

// costOne is one turn's estimated cost, model and orchestration.
func costOne(c *contracts.Cost) string {
	if c == nil {
		return "—"
	}
	return c.Currency + " " + amount(c.Model+c.Orchestration)
}

func amount(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return fmt.Sprintf("%.6f", v)
	}
	return fmt.Sprintf("%.4f", v)
}
