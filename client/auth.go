package client

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// authorize puts the client's credentials on req, whose body is body:
// a SigV4 signature for service (WithSigV4), else the bearer token.
func (c *Client) authorize(req *http.Request, body []byte, service string) error {
	if c.creds == nil {
		if tok := c.currentToken(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return nil
	}
	creds, err := c.creds.Retrieve(req.Context())
	if err != nil {
		return fmt.Errorf("retrieving AWS credentials to sign the request: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), service, c.region, time.Now()); err != nil {
		return fmt.Errorf("signing the request: %w", err)
	}
	return nil
}

func (c *Client) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// reloadToken re-reads the token file, if the token came from one; a file
// that cannot be read or holds no token leaves the token as it was.
func (c *Client) reloadToken() {
	if c.tokenFile == "" {
		return
	}
	if t, err := ReadToken(c.tokenFile); err == nil {
		c.mu.Lock()
		c.token = t
		c.mu.Unlock()
	}
}

// TokenPath is where `cairn dev` keeps the owner's token in its data
// directory: DATA/token (0600; rewritten when the server is started with
// a new token). Principals' other tokens are made with `cairn token add`
// and shown once; there is no API route for tokens.
func TokenPath(dataDir string) string { return filepath.Join(dataDir, "token") }

// MaxTokenBytes bounds a token read from a file.
const MaxTokenBytes = 256

// ReadToken reads a bearer token from a file such as TokenPath(data): its
// content, surrounding white space removed, which must be 1 to
// MaxTokenBytes printable ASCII characters without spaces.
func ReadToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+3))
	if err != nil {
		return "", fmt.Errorf("reading the token %s: %w", path, err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" || len(t) > MaxTokenBytes || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return "", errors.New("reading the token " + path + ": not a token (1-256 printable ASCII characters)")
	}
	return t, nil
}
