package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// upstream counts the requests it applies and answers like DynamoDB.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var applied atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := applied.Add(1)
		w.Header().Set("X-Amz-Crc32", "123")
		if n > 1 && r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.PutItem" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &applied
}

func post(c *http.Client, url, target, attempt, invocation string) (*http.Response, string, error) {
	req, _ := http.NewRequest("POST", url+"/", strings.NewReader(`{"TableName":"t"}`))
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Amz-Sdk-Request", "attempt="+attempt+"; max=3")
	req.Header.Set("Amz-Sdk-Invocation-Id", invocation)
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestActions(t *testing.T) {
	tests := []struct {
		action Action
		check  func(resp *http.Response, body string, err error) string
	}{
		{Pass, func(resp *http.Response, body string, err error) string {
			if err != nil || resp.StatusCode != 200 || body != `{"ok":true}` || resp.Header.Get("X-Amz-Crc32") != "123" {
				return "want the endpoint's answer with its headers"
			}
			return ""
		}},
		{Drop, func(resp *http.Response, body string, err error) string {
			if err == nil {
				return "want a transport error"
			}
			return ""
		}},
		{Reset, func(resp *http.Response, body string, err error) string {
			if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "reset") {
				return "want connection reset"
			}
			return ""
		}},
		{ServerError, func(resp *http.Response, body string, err error) string {
			if err != nil || resp.StatusCode != 500 || !strings.Contains(body, "InternalServerError") {
				return "want a 500 InternalServerError"
			}
			return ""
		}},
		{Stall, func(resp *http.Response, body string, err error) string {
			var te interface{ Timeout() bool }
			if !errors.As(err, &te) || !te.Timeout() {
				return "want a client timeout"
			}
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.action.String(), func(t *testing.T) {
			up, applied := upstream(t)
			p, err := New(up.URL, Once(Ops("UpdateItem"), tc.action))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{}}
			resp, body, err := post(c, p.URL(), "DynamoDB_20120810.UpdateItem", "1", "inv-1")
			if msg := tc.check(resp, body, err); msg != "" {
				t.Fatalf("%s: status %v body %q err %v: %s", tc.action, resp, body, err, msg)
			}
			if applied.Load() != 1 {
				t.Fatalf("the endpoint applied %d requests, want 1 (every action forwards)", applied.Load())
			}
			// the next request passes
			if resp, _, err := post(c, p.URL(), "DynamoDB_20120810.UpdateItem", "2", "inv-1"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("retry: %v %v", resp, err)
			}
			log := p.Log()
			if len(log) != 2 || log[0].Action != tc.action || log[1].Action != Pass || log[0].Op != "UpdateItem" || log[1].Attempt != 2 {
				t.Fatalf("log = %v", log)
			}
			if u := p.Unretried(); len(u) != 0 {
				t.Fatalf("unretried = %v", u)
			}
		})
	}
}

func TestRetriesAndHook(t *testing.T) {
	up, applied := upstream(t)
	p, err := New(up.URL, FirstAttempt(Ops(DynamoWrites...), Drop, Reset))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var hooked atomic.Int64
	p.SetHook(func(r Request, a Action) {
		if r.Attempt != 1 || a == Pass {
			t.Errorf("hook on %s attempt %d", r.Op, r.Attempt)
		}
		hooked.Add(1)
	})
	c := &http.Client{Transport: &http.Transport{}}
	if _, _, err := post(c, p.URL(), "DynamoDB_20120810.PutItem", "1", "a"); err == nil {
		t.Fatal("first attempt answered")
	}
	resp, body, err := post(c, p.URL(), "DynamoDB_20120810.PutItem", "2", "a")
	if err != nil || resp.StatusCode != 400 || !strings.Contains(body, "ConditionalCheckFailed") {
		t.Fatalf("retry: %v %q %v", resp, body, err)
	}
	if _, _, err := post(c, p.URL(), "DynamoDB_20120810.GetItem", "1", "b"); err != nil {
		t.Fatalf("a read is not faulted: %v", err)
	}
	if _, _, err := post(c, p.URL(), "DynamoDB_20120810.UpdateItem", "1", "c"); err == nil {
		t.Fatal("UpdateItem answered")
	}
	if applied.Load() != 4 || hooked.Load() != 2 {
		t.Fatalf("applied %d, hooked %d; want 4, 2 (once per fault)", applied.Load(), hooked.Load())
	}
	r := p.Retries()
	if len(r) != 1 || r[0].ErrorType != "ConditionalCheckFailedException" || r[0].Attempt != 2 {
		t.Fatalf("retries = %v", r)
	}
	u := p.Unretried()
	if len(u) != 1 || u[0].Op != "UpdateItem" || u[0].Action != Reset {
		t.Fatalf("unretried = %v", u)
	}
	if s := p.Summary(); !strings.Contains(s, "PutItem attempt>1=true pass ConditionalCheckFailedException") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestStallEndsOnClose(t *testing.T) {
	up, _ := upstream(t)
	p, err := New(up.URL, func(Request) Action { return Stall })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := post(&http.Client{Transport: &http.Transport{}}, p.URL(), "X.Y", "1", "s")
		done <- err
	}()
	for len(p.Log()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a stalled request was answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled request outlived Close")
	}
}
