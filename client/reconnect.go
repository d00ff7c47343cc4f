package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"
)

// ReconnectFor bounds how long a follower keeps trying to reach a server
// that went away (a restart takes seconds); WithReconnectFor changes it.
const ReconnectFor = 60 * time.Second

// reconnectBackoff is the first wait between reconnection attempts; each
// next one doubles, up to maxBackoff.
const (
	reconnectBackoff = 100 * time.Millisecond
	maxBackoff       = 5 * time.Second
)

// retryable reports whether err may heal by reconnecting: the server could
// not be reached or cut its answer, answered 502–504, or (when the token
// comes from a file a restarted server may have rewritten) rejected the
// token.
func (c *Client) retryable(err error) bool {
	var u *unreachableError
	var ae *Error
	switch {
	case errors.As(err, &u):
		return true
	case errors.As(err, &ae):
		return ae.Status == http.StatusBadGateway || ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusGatewayTimeout ||
			(ae.Status == http.StatusUnauthorized && c.tokenFile != "")
	}
	return false
}

// Reconnecting runs call, which must be idempotent (a read, a decision
// sent again). If it fails the way a server that went away fails — no
// connection, an answer cut off, 502–504, or with WithTokenFile a 401 — it
// reconnects: it waits (100 ms doubling to 5 s), re-reads the token file
// and calls again, for at most the reconnect bound (ReconnectFor) in all.
// It tells progress (nil: nobody) in one line: "  ↻ lost the server
// (connection refused); reconnecting… reconnected after 1.2s" and then
// what resume returns (nil: nothing), or "… gave up after 1m0s", "…
// failed", "… stopped". An error reconnecting cannot heal, the context's
// error and the last error once the time is up are returned.
func (c *Client) Reconnecting(ctx context.Context, progress io.Writer, resume func() string, call func() error) error {
	if progress == nil {
		progress = io.Discard
	}
	err := call()
	if err == nil || ctx.Err() != nil || !c.retryable(err) {
		return err
	}
	return c.reconnect(ctx, progress, resume, err, call)
}

// reconnect is Reconnecting after call failed with err (retryable).
func (c *Client) reconnect(ctx context.Context, progress io.Writer, resume func() string, err error, call func() error) error {
	if progress == nil {
		progress = io.Discard
	}
	start, bound := time.Now(), c.reconnectFor
	if bound <= 0 {
		bound = ReconnectFor
	}
	fmt.Fprintf(progress, "  ↻ lost the server (%s); reconnecting… ", reason(err))
	delay := reconnectBackoff
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintln(progress, "stopped")
			return ctx.Err()
		case <-t.C:
		}
		c.reloadToken()
		err = call()
		switch {
		case err == nil:
			tail := ""
			if resume != nil {
				tail = resume()
			}
			fmt.Fprintf(progress, "reconnected after %s%s\n", time.Since(start).Round(100*time.Millisecond), tail)
			return nil
		case ctx.Err() != nil:
			fmt.Fprintln(progress, "stopped")
			return ctx.Err()
		case !c.retryable(err):
			fmt.Fprintln(progress, "failed")
			return err
		case time.Since(start)+delay > bound:
			fmt.Fprintf(progress, "gave up after %s\n", time.Since(start).Round(100*time.Millisecond))
			return fmt.Errorf("the server did not come back within %s: %w", bound, err)
		}
		delay = min(2*delay, maxBackoff)
	}
}

// reason names why a request failed, in a few words.
func reason(err error) string {
	var errno syscall.Errno
	var ae *Error
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errStreamEnded):
		return "connection closed"
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return "token rejected; re-reading the token file"
	case errors.As(err, &ae):
		return http.StatusText(ae.Status)
	}
	return err.Error()
}
