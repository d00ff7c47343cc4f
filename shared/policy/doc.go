// Package policy decides allow / ask / deny for one tool call under a
// session's permission policy. It is pure: no I/O, no clock.
//
// Rules: a `bash` call is matched against the policy's command rules first
// (first match wins); then the per-tool decision; then the default ("allow"
// when empty). Anything malformed — an unknown decision word, a bash call
// whose input has no command, a bad pattern — denies: the policy fails closed.
//
// It may import shared/contracts and the standard library.
//
// # Usage
//
//	d, why := policy.Decide(spec.Policy, call)
//	if d == contracts.Ask { park the turn }
package policy
