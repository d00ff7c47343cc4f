// Package proto is the versioned JSON wire protocol between the
// remote SandboxAPI client (shared/sandbox/remote) and the sandboxd server
// (shared/sandbox/server): route names, headers, the small request bodies that
// are not contracts types, and the error codec (docs/DESIGN.md §6).
//
// It holds types and pure functions only, so that both ends — and the call
// ledger of shared/sandbox/local, whose recorded errors use the same codes —
// can share it. It may import shared/contracts and the standard library.
//
// # Protocol version 1
//
//	GET  /v1/health           no auth; {"ok":true,"protocol":1}
//	POST /v1/<method>         body: the request, 200: the result JSON
//	GET  /v1/calls/{call_id}  a contracts.CallOutcome (the effect-once query)
//	POST /v1/cancel           body: {"id":"<call id>"}, 200: {"stopped":bool}
//
// A mutating call runs to its end even when its client goes away (so that
// its outcome is recorded); POST /v1/cancel is how a client stops one, by
// the CallID it carries. It answers once the call has ended: a command's
// process group is killed and the call's recorded outcome says it was
// cancelled — a command's result has exit code -1 and, as the last line of
// its stderr, shared/sandbox/local's CancelMarker; another method fails
// with "cancelled" — so a repeat of that id returns that outcome and never
// runs it. It is idempotent: an unknown or finished id is nothing to stop
// ({"stopped":false}), though a call of that id arriving afterwards (the
// cancel overtook it) ends cancelled without running.
//
// <method> is one of read_file, write_file, edit_file, list_dir, stat,
// remove, make_dir, glob, grep, exec, run_script. Bodies are the contracts
// request structs, or PathRequest (list_dir, stat, make_dir),
// RemoveRequest and GlobRequest; write_file, remove and make_dir answer
// {}; cancel's are CancelRequest and CancelResult. Every request carries HeaderProtocol ("1"; a server answers 400
// "invalid" to another version and treats a missing header as 1) and,
// except health, "Authorization: Bearer <token>".
//
// Errors are a status and ErrorBody {"error":{"code":…,"message":…}}. The
// codes and their sentinels:
//
//	not_found    404  contracts.ErrNotFound
//	invalid      400  contracts.ErrInvalid
//	permission   403  contracts.ErrPermission
//	unauthorized 401  contracts.ErrPermission (wrong or missing token)
//	timeout      504  contracts.ErrTimeout
//	too_large    413  contracts.ErrTooLarge
//	conflict     409  contracts.ErrConflict
//	exists       409  contracts.ErrExists
//	unavailable  503  contracts.ErrUnavailable
//	cancelled    409  context.Canceled (a call stopped by POST /v1/cancel)
//	internal     500  (no sentinel)
//
// # Usage
//
// A server turns a sandbox error into a response:
//
//	code, status := proto.Code(err)
//	w.WriteHeader(status)
//	json.NewEncoder(w).Encode(proto.ErrorBody{Error: proto.ErrorDetail{Code: code, Message: err.Error()}})
//
// and a client turns it back into an error that matches the sentinel:
//
//	err := proto.Err(body.Error.Code, body.Error.Message)
//	errors.Is(err, contracts.ErrNotFound) // true for "not_found"
package proto
