package console

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/ids"
)

// Prefix is where the console is served.
const Prefix = "/console/"

// Config holds what the console needs.
type Config struct {
	// API is the API's handler: every page and action is an in-process
	// request to one of its /v1 routes.
	API http.Handler
	Log *slog.Logger
	// Now reads the clock (a schedule's next firing); nil = time.Now.
	Now func() time.Time
}

// Mount is New as api.ConsoleFunc: what assemble.Config.Console and
// backend.Serves.Console take.
func Mount(api http.Handler, log *slog.Logger, now func() time.Time) http.Handler {
	return New(Config{API: api, Log: log, Now: now})
}

// Console serves the console's pages.
type Console struct {
	api   http.Handler
	log   *slog.Logger
	now   func() time.Time
	pages *pages
	csrf  *http.CrossOriginProtection
	mux   *http.ServeMux
}

// New returns the console's handler, to be mounted at Prefix.
func New(cfg Config) *Console {
	c := &Console{api: cfg.API, log: cfg.Log, now: cfg.Now, pages: loadPages(), csrf: http.NewCrossOriginProtection()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.mux = http.NewServeMux()
	c.routes()
	return c
}

func (c *Console) routes() {
	m := c.mux
	m.Handle("GET /console/static/", staticFiles())
	m.HandleFunc("GET /console/login", c.loginPage)
	m.HandleFunc("POST /console/login", c.post(c.login))
	m.HandleFunc("POST /console/logout", c.post(c.logout))
	m.HandleFunc("GET /console/{$}", c.sessionsPage)
	m.HandleFunc("GET /console/sessions/{id}", c.sessionPage)
	m.HandleFunc("POST /console/sessions/{id}/submit", c.post(c.submit))
	m.HandleFunc("GET /console/sessions/{id}/turns/{sid}", c.turnPage)
	m.HandleFunc("GET /console/sessions/{id}/turns/{sid}/events", c.turnEvents)
	m.HandleFunc("POST /console/sessions/{id}/turns/{sid}/cancel", c.post(c.cancel))
	m.HandleFunc("POST /console/sessions/{id}/turns/{sid}/retry", c.post(c.retry))
	m.HandleFunc("POST /console/sessions/{id}/approvals/{aid}", c.post(c.decide))
	m.HandleFunc("GET /console/approvals", c.approvalsPage)
	m.HandleFunc("GET /console/workflows", c.workflowsPage)
	m.HandleFunc("GET /console/workflows/{wid}", c.workflowPage)
	m.HandleFunc("GET /console/workflows/{wid}/runs/{rid}", c.runPage)
	m.HandleFunc("POST /console/workflows/{wid}/runs/{rid}/cancel", c.post(c.cancelRun))
	m.HandleFunc("GET /console/schedules", c.schedulesPage)
	m.HandleFunc("POST /console/workflows/{wid}/schedules/{sch}/{action}", c.post(c.scheduleAction))
	m.HandleFunc("GET /console/usage", c.usagePage)
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.errorPage(w, r, http.StatusNotFound, "not_found", "There is no console page at "+r.URL.Path+".")
	})
}

// ServeHTTP serves a console request with the console's security headers;
// a panic becomes a 500 page and a log line, never a dropped connection.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			c.log.ErrorContext(r.Context(), "console handler panic", "path", r.URL.Path, "panic", v)
			c.errorPage(w, r, http.StatusInternalServerError, "internal", "The console failed to render this page.")
		}
	}()
	c.mux.ServeHTTP(w, r)
}

// post guards a form POST: a cross-origin request (a form another site
// submits) is refused before anything else happens, then the form is
// parsed (at most 1 MiB).
func (c *Console) post(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.csrf.Check(r); err != nil {
			c.errorPage(w, r, http.StatusForbidden, "cross_origin", "This form was posted from another site, so the console refused it. Open the console and submit it from there.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			c.errorPage(w, r, http.StatusBadRequest, "invalid_request", "The form could not be read: "+err.Error())
			return
		}
		h(w, r)
	}
}

// fail shows err: an API error as a page with the API's status, code and
// message (a 401 sends a page request to the login page); anything else
// as a logged 500 with a generic message.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		c.log.ErrorContext(r.Context(), "console request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		c.errorPage(w, r, http.StatusInternalServerError, "internal", "The console failed to load this page.")
		return
	}
	if ae.Status == http.StatusUnauthorized {
		next := r.URL.RequestURI()
		if r.Method != http.MethodGet {
			next = back(r, Prefix)
		}
		http.Redirect(w, r, "/console/login?next="+url.QueryEscape(next), http.StatusSeeOther)
		return
	}
	c.errorPage(w, r, ae.Status, ae.Code, ae.Message)
}

// redirect ends an action: back to the page it was made on.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// back is the form's "back" field when it is a console path (an action
// returns there), else def.
func back(r *http.Request, def string) string {
	if b := r.FormValue("back"); local(b) {
		return b
	}
	return def
}

// local reports whether p is a path of the console (no scheme, host or
// protocol-relative "//" that would send the browser elsewhere).
func local(p string) bool {
	return strings.HasPrefix(p, Prefix) && !strings.ContainsAny(p, "\\\r\n") && !strings.Contains(p, "//")
}

// seg is s escaped as one path segment. "." and ".." are escaped too
// (url.PathEscape leaves them): as they are, a mux cleans them away and
// the path names another route — the API's mux redirects, which the
// console would read as an answer.
func seg(s string) string { return ids.PathSegment(s) }

func sessionPath(id string) string { return Prefix + "sessions/" + seg(id) }

func turnPath(session, sub string) string { return sessionPath(session) + "/turns/" + seg(sub) }

func runPath(wf, run string) string { return Prefix + "workflows/" + seg(wf) + "/runs/" + seg(run) }
