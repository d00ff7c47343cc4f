package console

import (
	"net/http"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MaxTokenBytes bounds a token given to the login form.
const MaxTokenBytes = 512

type loginData struct {
	frame
	Next  string
	Error string
}

// loginPage shows the token form. With ?token= (the link `cairn dev`
// prints) it signs in at once and redirects, so the token leaves the
// address bar — unless another site sent the browser here (Sec-Fetch-Site
// cross-site or same-site): a link must not sign a victim into someone
// else's account, so then the form is shown instead.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	next := nextOf(r.URL.Query().Get("next"))
	tok := r.URL.Query().Get("token")
	if tok == "" {
		c.render(w, r, http.StatusOK, "login", &loginData{frame: frame{Title: "Sign in"}, Next: next})
		return
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		c.render(w, r, http.StatusForbidden, "login", &loginData{frame: frame{Title: "Sign in"}, Next: next,
			Error: "Another site opened this sign-in link, so the console did not use its token. Paste the token here instead, or open the link from your terminal."})
		return
	}
	c.signIn(w, r, tok, next)
}

// login signs in with the form's token (POST /console/login).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	c.signIn(w, r, r.PostFormValue("token"), nextOf(r.PostFormValue("next")))
}

// signIn checks tok with the API (GET /v1/principal, as the token's
// bearer) and, if the API knows it, keeps it in the login cookie and
// redirects to next; otherwise the form shows the API's answer.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request, tok, next string) {
	tok = strings.TrimSpace(tok)
	fail := func(status int, msg string) {
		c.render(w, r, status, "login", &loginData{frame: frame{Title: "Sign in"}, Next: next, Error: msg})
	}
	if tok == "" || len(tok) > MaxTokenBytes || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		fail(http.StatusBadRequest, "That is not an API token: paste the token cairn printed (letters and digits, no spaces).")
		return
	}
	check := r.Clone(r.Context())
	check.Header = http.Header{"Authorization": {"Bearer " + tok}}
	var p contracts.Principal
	if err := c.get(check, "/v1/principal", &p); err != nil {
		if ae, ok := err.(*apiError); ok && ae.Status < 500 {
			fail(ae.Status, "The API refused this token ("+ae.Code+": "+ae.Message+").")
			return
		}
		c.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	redirect(w, r, next)
}

// logout forgets the login cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	redirect(w, r, Prefix+"login")
}

// secure: the console is served over HTTPS (directly, or behind API
// Gateway or a proxy that says so), so the cookie must never go over HTTP.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// nextOf is where a login returns: a console path, else the sessions page.
func nextOf(next string) string {
	if local(next) && !strings.HasPrefix(next, Prefix+"login") {
		return next
	}
	return Prefix
}
