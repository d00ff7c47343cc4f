package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// WithHandler sends the client's requests to h in this process — the
// very handler a server would serve (cmd/cairn's embedded mode calls the
// runtime's API so) — instead of over the network. Answers stream: an
// event stream reaches the caller as the handler writes and flushes it,
// and closing the answer's body (or ending the request's context) ends
// the handler's request context.
func WithHandler(h http.Handler) Option {
	return func(c *Client) { c.hc = &http.Client{Transport: inProcess{h}} }
}

// inProcess is an http.RoundTripper that serves each request with a
// handler, its answer written into a pipe.
type inProcess struct{ h http.Handler }

func isInProcess(rt http.RoundTripper) bool { _, ok := rt.(inProcess); return ok }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	req = req.Clone(ctx)
	if req.Body == nil {
		req.Body = http.NoBody
	}
	if req.RemoteAddr == "" {
		req.RemoteAddr = "127.0.0.1:0" // in-process: the caller is this process
	}
	if req.RequestURI == "" {
		req.RequestURI = req.URL.RequestURI()
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	go func() {
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				w.start(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("the handler panicked: %v", v))
				return
			}
			w.start(http.StatusOK) // a handler that wrote nothing answered 200
			pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.started:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &pipeBody{PipeReader: pr, cancel: cancel}, ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the handler's ResponseWriter: the status and headers are
// the answer's when first written; the body goes into the pipe.
type pipeWriter struct {
	header  http.Header
	sent    http.Header
	status  int
	pw      *io.PipeWriter
	once    sync.Once
	started chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) start(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.started)
	})
}

func (w *pipeWriter) WriteHeader(status int) {
	if status >= 100 && status < 200 {
		return // informational: not the answer
	}
	w.start(status)
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.pw.Write(p)
}

// Flush: every write already reaches the reader.
func (w *pipeWriter) Flush() { w.start(http.StatusOK) }

// pipeBody ends the handler's request when the caller closes it.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}
