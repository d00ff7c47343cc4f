// Package auth is the local deployment's token principals: the token file
// DATA/tokens.json that says which bearer token is which principal.
//
// Each entry is a principal's name, the SHA-256 (hex) of its token, whether
// it is an operator and when it was made; a token itself is never stored
// (it is printed once, by `cairn token add`) and a presented one is hashed
// and compared in constant time. The file is read only when it is a
// regular file of this user that no one else may read or write, opened
// without following a symlink; anything else is refused, not trusted. It
// is written whole (a new 0600 file beside it, renamed over it) under an
// flock on DATA/tokens.json.lock, so `cairn token add|revoke` and a running
// `cairn dev` never lose each other's changes. A Store re-reads the file
// when its inode, size or modification time changes (one lstat per
// request), so a running server sees tokens added and revoked at once.
//
// OwnerName ("owner") is the principal of the token `cairn dev` makes at
// its first start and keeps in DATA/token for the CLI. It is an operator:
// whoever can read DATA/token can read the database beside it anyway.
//
// It may import shared/contracts, shared/ids and the standard library.
//
// # Usage
//
//	st := auth.Open(dataDir)
//	tok, err := st.Add("ci", false)              // print tok once
//	p, err := st.Authenticate(tok)               // contracts.Principal{Name: "ci"}
//	api.Config{Authenticate: st.Request}         // the bearer token of each request
package auth
