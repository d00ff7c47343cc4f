package dynamo

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A write whose answer was lost is not a conflict. DynamoDB may apply a
// conditional write and the answer never arrive (a timeout, a reset
// connection, a 500): the SDK sends the same request again and the retry
// fails its condition — on the item the first attempt wrote. So every
// conditional write that must tell "I won" from "someone else did" (the
// claims of create-if-absent, the version-guarded puts) stamps its item
// with a write id, fresh per call and identical in each of the SDK's
// attempts (they resend the same request), and asks for the stored item on
// failure (ALL_OLD). If that item is the one this call meant to write —
// same write id, same record (body or claim check) and version — the
// write is "already mine" and the call returns what a success returns. If
// a later writer has moved the item on, the item no longer proves it, and
// the call keeps its conflict (ErrConflict, ErrExists, created=false).
//
// Writes that are first-wins no-ops on a failed condition (events, stream
// chunks and markers, transcript nodes, pointers, tool results, node
// results) return the same thing whoever wrote first, so they need no id.

// attrWriteID is the write id of the call that last put the item (S).
const attrWriteID = "write_id"

// newWriteID returns a fresh write id: 16 random hex digits.
func newWriteID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// stamped returns it with a fresh write id, unless it carries one already.
func stamped(it item) item {
	if getS(it, attrWriteID) != "" {
		return it
	}
	return with(it, item{attrWriteID: str(newWriteID())})
}

// mine reports whether old — the stored item a failed condition returned —
// is the item it (stamped): written by this very call, not rewritten since.
func mine(old, it item) bool {
	id := getS(it, attrWriteID)
	if id == "" || len(old) == 0 || getS(old, attrWriteID) != id {
		return false
	}
	for _, name := range []string{attrBody, attrBodyZ, attrBlob, attrVersion} {
		if !sameValue(old[name], it[name]) {
			return false
		}
	}
	return true
}

// sameValue compares two scalar attribute values (absent equals absent).
func sameValue(a, b types.AttributeValue) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case *types.AttributeValueMemberS:
		bv, ok := b.(*types.AttributeValueMemberS)
		return ok && av.Value == bv.Value
	case *types.AttributeValueMemberN:
		bv, ok := b.(*types.AttributeValueMemberN)
		return ok && av.Value == bv.Value
	case *types.AttributeValueMemberB:
		bv, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(av.Value, bv.Value)
	case *types.AttributeValueMemberBOOL:
		bv, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && av.Value == bv.Value
	}
	return false
}
