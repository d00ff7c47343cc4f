package console

import (
	"net/http"
	"strings"
)

// turnEvents forwards a turn page's live view to the API's events route
// (GET …/submissions/{sid}/events) in process and passes its answer
// through as it is written: with Accept: text/event-stream (an
// EventSource) the API's server-sent events — or its 406 where responses
// are delivered whole (API Gateway), on which the page falls back to
// long-polling — otherwise the JSON long-poll with ?after=&wait=&limit=.
// Last-Event-ID is passed on, so a reconnecting EventSource resumes
// exactly.
func (c *Console) turnEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path := query("/v1/sessions/"+seg(r.PathValue("id"))+"/submissions/"+seg(r.PathValue("sid"))+"/events",
		"after", q.Get("after"), "wait", q.Get("wait"), "limit", q.Get("limit"))
	req, err := request(r, http.MethodGet, path, nil)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if sse := strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream"); sse {
		req.Header.Set("Accept", "text/event-stream")
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			req.Header.Set("Last-Event-ID", id)
		}
	}
	w.Header().Del("Content-Security-Policy") // not a page
	c.api.ServeHTTP(&passthrough{w: w}, req)
}

// passthrough is the ResponseWriter of an in-process call whose answer
// goes to the browser as it is written: its flushes and write deadlines
// reach the server's writer (http.ResponseController unwraps to it).
type passthrough struct{ w http.ResponseWriter }

func (p *passthrough) Header() http.Header         { return p.w.Header() }
func (p *passthrough) WriteHeader(status int)      { p.w.WriteHeader(status) }
func (p *passthrough) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *passthrough) Unwrap() http.ResponseWriter { return p.w }
func (p *passthrough) Flush()                      { _ = http.NewResponseController(p.w).Flush() }
