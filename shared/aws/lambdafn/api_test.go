package lambdafn_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
)

// echo is an httptest-style handler: it reflects what it received, and
// answers /missing with a JSON error.
func echo() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions/{id}/submissions", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cookie, _ := r.Cookie("sid")
		var sid string
		if cookie != nil {
			sid = cookie.Value
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Session", r.PathValue("id"))
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"path": r.URL.Path, "wait": r.URL.Query().Get("wait"), "key": r.Header.Get("Idempotency-Key"),
			"body": string(body), "cookie": sid, "method": r.Method,
		})
	})
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not_found","message":"no such session"}`)
	})
	return mux
}

func TestAPIHandler(t *testing.T) {
	h := lambdafn.APIHandler(echo())
	tests := []struct {
		name       string
		method     string
		path       string
		header     http.Header
		body       string
		wantStatus int
		wantBody   map[string]string
		wantHeader map[string]string
	}{
		{
			name: "round trip", method: "POST", path: "/v1/sessions/ses_1/submissions?wait=true",
			header: http.Header{"Idempotency-Key": {"k-1"}, "Content-Type": {"application/json"}, "Cookie": {"sid=abc; other=1"}},
			body:   `{"prompt":"hi"}`, wantStatus: http.StatusAccepted,
			wantBody: map[string]string{
				"path": "/v1/sessions/ses_1/submissions", "wait": "true", "key": "k-1",
				"body": `{"prompt":"hi"}`, "cookie": "abc", "method": "POST",
			},
			wantHeader: map[string]string{"X-Session": "ses_1", "Content-Type": "application/json"},
		},
		{
			name: "json error", method: "GET", path: "/missing", wantStatus: http.StatusNotFound,
			wantBody:   map[string]string{"error": "not_found", "message": "no such session"},
			wantHeader: map[string]string{"Content-Type": "application/json"},
		},
		{
			name: "no route", method: "GET", path: "/nowhere", wantStatus: http.StatusNotFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := harness.APIEvent(tc.method, tc.path, tc.header, []byte(tc.body))
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatalf("APIHandler: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, tc.wantStatus, resp.Body)
			}
			if resp.IsBase64Encoded {
				t.Errorf("text response base64-encoded")
			}
			for k, v := range tc.wantHeader {
				if got := resp.Headers[k]; got != v {
					t.Errorf("header %s = %q, want %q (headers %v)", k, got, v, resp.Headers)
				}
			}
			if tc.wantBody != nil {
				var got map[string]string
				if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
					t.Fatalf("body %q: %v", resp.Body, err)
				}
				for k, v := range tc.wantBody {
					if got[k] != v {
						t.Errorf("body[%s] = %q, want %q", k, got[k], v)
					}
				}
			}
		})
	}
}
