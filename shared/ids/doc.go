// Package ids mints cairn's identifiers and derives the deterministic ones.
//
// Minted ids are prefix_ + 12 hex digits of Unix milliseconds + a 6-digit
// process-local counter + 8 random hex digits: lexical order is creation order
// within a process, and across processes to the millisecond. Derived ids
// (transcript nodes, stream keys, approvals) are pure functions of their
// inputs so a re-driven handler writes under the same key.
//
// RandomHex is for the random strings that are not ids: tokens, lease-owner
// suffixes, test names.
//
// It may import shared/contracts and the standard library.
//
// # Usage
//
//	gen := ids.New(clock)
//	sid := gen.New("ses")                       // ses_0193a4…
//	node := ids.Node(sub.ID, 2, contracts.RoleAssistant)
//	owner := "fn_" + ids.RandomHex(6)           // fn_3f9a0c1b2d4e
package ids
