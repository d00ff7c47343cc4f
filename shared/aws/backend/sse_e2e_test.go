package backend_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// TestAPIGatewayRefusesAnEventStream: behind API Gateway the response is
// delivered whole, so an event stream is a 406 JSON error pointing at the
// long-poll, which works; the session stream too.
func TestAPIGatewayRefusesAnEventStream(t *testing.T) {
	s := newStack(t, 5*time.Second, 5, nil)
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:plain"})
	s.until(sub, 60*time.Second)
	sse := map[string]string{"Accept": "text/event-stream"}
	for _, path := range []string{"/v1/sessions/" + sid + "/submissions/" + sub + "/events", "/v1/sessions/" + sid + "/events"} {
		code, body := s.call("GET", path, nil, sse)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusNotAcceptable || e["code"] != "not_acceptable" {
			t.Errorf("%s as a stream: %d %v", path, code, body)
		}
	}
	if code, body := s.call("GET", "/v1/sessions/"+sid+"/submissions/"+sub+"/events?after=0", nil, nil); code != http.StatusOK || body["done"] != true {
		t.Errorf("long-poll: %d %v", code, body)
	}
}
