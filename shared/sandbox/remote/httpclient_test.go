package remote_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/sandbox/remote"
)

// The shared HTTP client goes to no proxy, follows no redirect (the bearer
// token must not travel on) and bounds connecting and TLS handshakes.
func TestNewHTTPClient(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirecting := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusFound))
	defer redirecting.Close()

	for _, connect := range []time.Duration{0, 2 * time.Second} {
		hc := remote.NewHTTPClient(connect)
		tr, ok := hc.Transport.(*http.Transport)
		if !ok {
			t.Fatalf("NewHTTPClient(%s).Transport is %T, want *http.Transport", connect, hc.Transport)
		}
		if tr.Proxy != nil || tr.TLSHandshakeTimeout <= 0 || tr.MaxIdleConnsPerHost <= 0 {
			t.Errorf("NewHTTPClient(%s): proxy set %v, TLS handshake timeout %s, idle per host %d; want no proxy and both bounded",
				connect, tr.Proxy != nil, tr.TLSHandshakeTimeout, tr.MaxIdleConnsPerHost)
		}
		resp, err := hc.Get(redirecting.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || elsewhere.Load() != 0 {
			t.Errorf("NewHTTPClient(%s) followed a redirect: status %d, %d requests elsewhere", connect, resp.StatusCode, elsewhere.Load())
		}
	}
}
