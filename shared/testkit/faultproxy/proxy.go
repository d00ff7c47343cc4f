package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Action is what the proxy does with a request's answer. Every action but
// Pass still forwards the request, so the endpoint applies it.
type Action int

const (
	// Pass returns the endpoint's answer unchanged.
	Pass Action = iota
	// Drop discards the answer and closes the client's connection without
	// a response (the client reads EOF).
	Drop
	// Reset discards the answer and resets the client's connection (TCP
	// RST: "connection reset by peer").
	Reset
	// ServerError discards the answer and returns HTTP 500 with the
	// service's InternalServerError (JSON for X-Amz-Target services, XML
	// otherwise): DynamoDB's "the request may or may not have succeeded".
	ServerError
	// Stall discards the answer and sends nothing until the client gives
	// up (its timeout, its context) or the proxy closes: a timeout.
	Stall
)

var actionNames = [...]string{"pass", "drop", "reset", "500", "stall"}

func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Request is what a Rule sees of a request, before it is forwarded.
type Request struct {
	Seq    int // 1, 2, … in arrival order
	Method string
	Path   string
	// Target is the X-Amz-Target header ("DynamoDB_20120810.PutItem",
	// "AmazonSQS.SendMessage"); empty for REST services (S3).
	Target string
	// Op is the operation: Target after its last dot ("PutItem"), or the
	// HTTP method when there is no Target ("PUT" for S3 PutObject).
	Op string
	// Attempt is the SDK's attempt number (amz-sdk-request: attempt=N);
	// 1 when the header is absent.
	Attempt int
	// Invocation is amz-sdk-invocation-id: the same for every attempt of
	// one SDK call; empty when the header is absent.
	Invocation string
	Body       []byte
}

// A Rule decides the fate of each request's answer. It is called before
// the request is forwarded, concurrently for concurrent requests; a Rule
// that blocks delays the request. A nil Rule passes everything.
type Rule func(Request) Action

// Entry is one request in the proxy's log.
type Entry struct {
	Seq        int
	Op         string
	Attempt    int
	Invocation string
	Action     Action
	// Status is the endpoint's HTTP status (0 if it could not be reached,
	// then Err says why); ErrorType its error code without namespace
	// ("ConditionalCheckFailedException"), empty on success.
	Status    int
	ErrorType string
	Err       string
}

func (e Entry) String() string {
	s := fmt.Sprintf("#%d %s attempt %d → %d", e.Seq, e.Op, e.Attempt, e.Status)
	if e.ErrorType != "" {
		s += " " + e.ErrorType
	}
	if e.Err != "" {
		s += " (" + e.Err + ")"
	}
	if e.Action != Pass {
		s += ", answer " + e.Action.String()
	}
	return s
}

// Proxy is a running fault-injecting reverse proxy on 127.0.0.1.
type Proxy struct {
	target  string // scheme://host[:port], no trailing slash
	ln      net.Listener
	srv     *http.Server
	tr      *http.Transport
	seq     atomic.Int64
	closing chan struct{}
	once    sync.Once

	mu   sync.Mutex
	rule Rule
	hook func(Request, Action)
	log  []Entry
}

// New starts a proxy in front of endpoint (e.g. "http://127.0.0.1:4566")
// that applies rule to every request.
func New(endpoint string, rule Rule) (*Proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: endpoint %q: want scheme://host[:port]", endpoint)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening: %w", err)
	}
	p := &Proxy{
		target:  u.Scheme + "://" + u.Host,
		ln:      ln,
		tr:      &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second},
		closing: make(chan struct{}),
		rule:    rule,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's address, to use as the SDK client's endpoint.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy: stalled answers end (their connections close),
// open connections are closed.
func (p *Proxy) Close() {
	p.once.Do(func() {
		close(p.closing)
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
}

// SetRule replaces the rule (nil: pass everything) for requests arriving
// from now on.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = r
}

// SetHook sets a function run for every faulted request after the
// endpoint has answered it and before the fault reaches the client: a
// test uses it to let another writer move an item on between a write and
// its retry. nil removes it.
func (p *Proxy) SetHook(h func(Request, Action)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

// Log returns every request seen so far, in arrival order.
func (p *Proxy) Log() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.log)
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// Faults returns the logged requests whose answer was lost.
func (p *Proxy) Faults() []Entry {
	var out []Entry
	for _, e := range p.Log() {
		if e.Action != Pass {
			out = append(out, e)
		}
	}
	return out
}

// Retries returns the logged requests that are later attempts of an SDK
// call one of whose earlier attempts lost its answer: what the retryer
// sent, and (Status, ErrorType) what it met.
func (p *Proxy) Retries() []Entry {
	log := p.Log()
	faulted := map[string]int{} // invocation → first faulted attempt
	for _, e := range log {
		if e.Action != Pass && e.Invocation != "" {
			if a, ok := faulted[e.Invocation]; !ok || e.Attempt < a {
				faulted[e.Invocation] = e.Attempt
			}
		}
	}
	var out []Entry
	for _, e := range log {
		if a, ok := faulted[e.Invocation]; ok && e.Attempt > a {
			out = append(out, e)
		}
	}
	return out
}

// Unretried returns the faults the SDK never retried: no later attempt of
// the same invocation reached the proxy (the call gave up, or the client
// does not retry). A test that expects every lost answer to be retried
// asserts this is empty.
func (p *Proxy) Unretried() []Entry {
	log := p.Log()
	var out []Entry
	for _, f := range log {
		if f.Action == Pass {
			continue
		}
		retried := slices.ContainsFunc(log, func(e Entry) bool {
			return f.Invocation != "" && e.Invocation == f.Invocation && e.Attempt > f.Attempt
		})
		if !retried {
			out = append(out, f)
		}
	}
	return out
}

// Summary counts the log by operation, action and endpoint outcome, one
// line per kind, for a test's log.
func (p *Proxy) Summary() string {
	counts := map[string]int{}
	for _, e := range p.Log() {
		k := fmt.Sprintf("%s attempt>1=%v %s", e.Op, e.Attempt > 1, e.Action)
		if e.ErrorType != "" {
			k += " " + e.ErrorType
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%6d  %s\n", counts[k], k)
	}
	return b.String()
}

func (p *Proxy) current() (Rule, func(Request, Action)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rule, p.hook
}

func (p *Proxy) record(e Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, e)
}

// ServeHTTP forwards r, then delivers, loses or replaces the answer as the
// rule says.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: reading request: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{
		Seq: int(p.seq.Add(1)), Method: r.Method, Path: r.URL.Path, Target: r.Header.Get("X-Amz-Target"),
		Attempt: attempt(r.Header.Get("Amz-Sdk-Request")), Invocation: r.Header.Get("Amz-Sdk-Invocation-Id"), Body: body,
	}
	req.Op = req.Method
	if req.Target != "" {
		req.Op = req.Target[strings.LastIndex(req.Target, ".")+1:]
	}
	rule, _ := p.current()
	act := Pass
	if rule != nil {
		act = rule(req)
	}
	e := Entry{Seq: req.Seq, Op: req.Op, Attempt: req.Attempt, Invocation: req.Invocation, Action: act}
	resp, respBody, err := p.forward(r, body)
	if err != nil {
		e.Err = err.Error()
		p.record(e)
		http.Error(w, "faultproxy: forwarding: "+err.Error(), http.StatusBadGateway)
		return
	}
	e.Status, e.ErrorType = resp.StatusCode, errorType(resp.Header, respBody)
	p.record(e)
	if act != Pass {
		if _, hook := p.current(); hook != nil {
			hook(req, act)
		}
	}
	switch act {
	case Pass:
		h := w.Header()
		for k, vs := range resp.Header {
			if !hopByHop(k) {
				h[k] = vs
			}
		}
		if r.Method == http.MethodHead {
			if cl := resp.Header.Get("Content-Length"); cl != "" {
				h.Set("Content-Length", cl)
			}
		} else {
			h.Set("Content-Length", strconv.Itoa(len(respBody)))
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(respBody)
	case ServerError:
		if req.Target != "" {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("X-Amzn-Errortype", "InternalServerError")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"faultproxy: answer replaced"}`)
		} else {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>faultproxy: answer replaced</Message></Error>`)
		}
	case Stall:
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		hangUp(w, false)
	case Reset:
		hangUp(w, true)
	default: // Drop
		hangUp(w, false)
	}
}

// forward sends the request to the endpoint and reads its whole answer. It
// does not use the client's context: a real server finishes a request
// whose client went away, and so does the endpoint here.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range r.Header {
		if !hopByHop(k) {
			out.Header[k] = vs
		}
	}
	out.Host = r.Host // transparent: what the client signed
	out.ContentLength = int64(len(body))
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the endpoint's answer: %w", err)
	}
	return resp, b, nil
}

// hangUp takes the connection from the server and closes it, with a TCP
// RST when reset is set.
func hangUp(w http.ResponseWriter, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faultproxy: the connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return // already gone
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

func hopByHop(k string) bool {
	return slices.ContainsFunc(hopHeaders, func(h string) bool { return strings.EqualFold(h, k) })
}

var attemptRE = regexp.MustCompile(`attempt=(\d+)`)

// attempt parses amz-sdk-request ("attempt=2; max=4"); 1 when absent.
func attempt(h string) int {
	if m := attemptRE.FindStringSubmatch(h); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

var xmlCodeRE = regexp.MustCompile(`<Code>([^<]+)</Code>`)

// errorType is the error code of an endpoint answer without its namespace,
// "" for a success.
func errorType(h http.Header, body []byte) string {
	if t := h.Get("X-Amzn-Errortype"); t != "" {
		return trimType(t)
	}
	var j struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &j) == nil && j.Type != "" {
		return trimType(j.Type)
	}
	if m := xmlCodeRE.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

// trimType drops a namespace ("com.amazonaws…#X") and a suffix (":http://…").
func trimType(t string) string {
	t = t[strings.LastIndex(t, "#")+1:]
	if i := strings.Index(t, ":"); i >= 0 {
		t = t[:i]
	}
	return t
}
