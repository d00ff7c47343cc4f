package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/cairnrun/cairn/shared/ids"
)

// cmdConsole serves a remote API's web console on loopback: a browser
// cannot SigV4-sign, nor add a bearer header to a page it navigates to,
// so this proxy does it for every request it forwards to --api's
// /console/ — signed with the caller's AWS credentials (IAM
// authorization, the default) or carrying --token as a bearer token (a
// JWT authorizer's token, or `cairn dev --backend aws`'s). The console
// in the api function then sees the authorizer's caller, as every route
// does.
// maxBearerBytes bounds a token read from --token-file (a JWT with many
// claims is a few KB).
const maxBearerBytes = 16 << 10

func cmdConsole(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	api := fs.String("api", env.Addr, "the API's URL (the stack's ApiUrl output, or cairn dev --backend aws's address)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to serve the console on")
	token := fs.String("token", "", "send this bearer token instead of signing with AWS credentials (a JWT authorizer's token)")
	tokenFile := fs.String("token-file", "", "read the bearer token from this file (unlike --token, not visible to other users in the process list)")
	region := fs.String("region", "", "the API's region for SigV4 (default: the AWS configuration's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokenFile != "" {
		if *token != "" {
			return errors.New("console: give --token or --token-file, not both")
		}
		b, err := os.ReadFile(*tokenFile)
		t := strings.TrimSpace(string(b))
		switch {
		case err != nil:
			return fmt.Errorf("console: --token-file: %w", err)
		case t == "" || len(t) > maxBearerBytes || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
			return fmt.Errorf("console: --token-file %s holds no token (1-%d printable ASCII characters)", *tokenFile, maxBearerBytes)
		}
		*token = t
	}
	up, err := url.Parse(strings.TrimSuffix(*api, "/"))
	if err != nil || (up.Scheme != "https" && up.Scheme != "http") || up.Host == "" {
		return fmt.Errorf("console: --api %q: want the API's http(s) URL", *api)
	}
	p := &consoleProxy{api: up, token: *token, key: ids.RandomHex(16), client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if p.token == "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return fmt.Errorf("console: loading AWS credentials to sign with (or give --token): %w", err)
		}
		if *region != "" {
			cfg.Region = *region
		}
		if cfg.Region == "" {
			return errors.New("console: no AWS region to sign for: set --region or AWS_REGION")
		}
		p.creds, p.region, p.signer = cfg.Credentials, cfg.Region, v4.NewSigner()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *addr, err)
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		ln.Close()
		return fmt.Errorf("console: --addr %s is not a loopback address: the proxy signs for whoever reaches it", *addr)
	}
	p.host = ln.Addr().String()
	srv := newServer(p)
	srv.WriteTimeout = 0 // event streams
	fmt.Printf("cairn console for %s listening on http://%s\n", up, p.host)
	fmt.Printf("console http://%s/proxy/login?key=%s\n", p.host, p.key)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// consoleProxy forwards the browser's console requests to the API, signed.
// Only the browser that opened its link may use it: the link's key
// becomes a SameSite=Strict cookie every request must carry, on the
// address it listens on (no other Host: a rebound DNS name gets nothing),
// and a cross-origin POST is refused here before it is signed.
type consoleProxy struct {
	api    *url.URL
	host   string // what the browser's Host must say
	key    string
	token  string
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	client *http.Client
	csrf   http.CrossOriginProtection
}

const proxyCookie = "cairn_console_proxy"

func (p *consoleProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host != p.host {
		http.Error(w, "cairn console: this proxy answers only on "+p.host, http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/proxy/login" {
		if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("key")), []byte(p.key)) != 1 {
			http.Error(w, "cairn console: open the link cairn console printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: proxyCookie, Value: p.key, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	ck, err := r.Cookie(proxyCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(p.key)) != 1 {
		http.Error(w, "cairn console: open the link cairn console printed", http.StatusForbidden)
		return
	}
	if err := p.csrf.Check(r); err != nil {
		http.Error(w, "cairn console: a cross-origin request is not forwarded", http.StatusForbidden)
		return
	}
	// SameSite=Strict does not keep the key cookie from a page on another
	// port of this loopback address (same-site, not same-origin): its
	// links and images would be signed GETs. The console links only to
	// itself.
	if s := r.Header.Get("Sec-Fetch-Site"); s == "same-site" || s == "cross-site" {
		http.Error(w, "cairn console: a request another site made is not forwarded", http.StatusForbidden)
		return
	}
	if !consolePath(r.URL) {
		http.NotFound(w, r)
		return
	}
	if err := p.forward(w, r); err != nil {
		http.Error(w, "cairn console: "+err.Error(), http.StatusBadGateway)
	}
}

// consolePath reports whether u is a path under /console/ that stays
// there: a dot segment ("/console/../v1/…", also as %2E%2E) would have
// the API clean it into a route the proxy does not forward.
func consolePath(u *url.URL) bool {
	if u.Path != "/console" && !strings.HasPrefix(u.Path, "/console/") {
		return false
	}
	for _, s := range strings.Split(u.Path, "/") {
		if s == "." || s == ".." {
			return false
		}
	}
	return true
}

// forward sends r on to the API, signed, and its answer back as it comes
// (flushed, for an event stream).
func (p *consoleProxy) forward(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	target := *p.api
	target.Path = strings.TrimSuffix(p.api.Path, "/") + r.URL.Path
	target.RawPath = strings.TrimSuffix(p.api.EscapedPath(), "/") + r.URL.EscapedPath() // an id's %2F stays in its segment
	target.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range []string{"Accept", "Content-Type", "Last-Event-ID", "Accept-Language", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	// Checked above (same origin as this proxy): so say to the console, whose
	// own check would otherwise compare this proxy's Origin with the API's host.
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	} else {
		creds, err := p.creds.Retrieve(r.Context())
		if err != nil {
			return fmt.Errorf("AWS credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		if err := p.signer.SignHTTP(r.Context(), creds, req, hex.EncodeToString(sum[:]), "execute-api", p.region, time.Now()); err != nil {
			return fmt.Errorf("signing: %w", err)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("calling the API: %w", err)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the browser went away
			}
			_ = rc.Flush()
		}
		if err != nil {
			return nil // the answer is under way: an error now can only cut it short
		}
	}
}
