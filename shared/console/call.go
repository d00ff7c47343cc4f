package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CookieName is the cookie that keeps a console login's bearer token.
const CookieName = "cairn_console"

// apiError is an API answer of 4xx or 5xx: its status and its JSON error.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// credentials sets the Authorization header of an in-process call made for
// r: the one r carries (a signing proxy's, a CLI's), else the login
// cookie's token as a bearer token. On AWS neither matters: the principal
// is the authorizer's, in r's context.
func credentials(r *http.Request, h http.Header) {
	if a := r.Header.Get("Authorization"); a != "" {
		h.Set("Authorization", a)
	} else if ck, err := r.Cookie(CookieName); err == nil && ck.Value != "" {
		h.Set("Authorization", "Bearer "+ck.Value)
	}
	if tp := r.Header.Get("Traceparent"); tp != "" {
		h.Set("Traceparent", tp)
	}
}

// request builds the in-process API request for r: same context (the
// authorizer's caller, deadlines, the meter), r's credentials, a JSON body.
func request(r *http.Request, method, path string, body any) (*http.Request, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the body of %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", method, path, err)
	}
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	req.RequestURI = req.URL.RequestURI()
	credentials(r, req.Header)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// call makes one in-process API request for r and decodes its JSON answer
// into out (when not nil); an answer of 400 or more is an *apiError with
// the API's code and message.
func (c *Console) call(r *http.Request, method, path string, body, out any, hdr ...string) error {
	req, err := request(r, method, path, body)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := &recorder{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 400 {
		return errorOf(rec.status, rec.body.Bytes())
	}
	if rec.status >= 300 { // the API answers, it never redirects: a redirect is no answer to show or to act on
		return &apiError{Status: http.StatusBadGateway, Code: "internal", Message: fmt.Sprintf("the API answered %s %s with a redirect", method, path)}
	}
	if out == nil || rec.status == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// get is call for a GET.
func (c *Console) get(r *http.Request, path string, out any) error {
	return c.call(r, http.MethodGet, path, nil, out)
}

// errorOf reads an API error answer ({"error":{"code","message"}}).
func errorOf(status int, raw []byte) *apiError {
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &apiError{Status: status, Code: "error", Message: http.StatusText(status)}
	if json.Unmarshal(raw, &b) == nil && b.Error.Code != "" {
		e.Code, e.Message = b.Error.Code, b.Error.Message
	}
	return e
}

// notFound reports whether err is the API's 404.
func notFound(err error) bool {
	ae, ok := err.(*apiError)
	return ok && ae.Status == http.StatusNotFound
}

// recorder is the ResponseWriter of an in-process call that is read whole.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// whoami is the request's principal as the API finds it (GET
// /v1/principal): the one check every page makes first, so a page without
// credentials goes to the login page before it reads anything else.
func (c *Console) whoami(r *http.Request) (contracts.Principal, error) {
	var p contracts.Principal
	err := c.get(r, "/v1/principal", &p)
	return p, err
}

// query is a path with its query string from pairs of key and value (empty
// values left out).
func query(path string, kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return path + b.String()
}
