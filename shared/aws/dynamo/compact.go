package dynamo

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A submission record is rewritten at every phase change and lease of its
// turn (~9 times a turn), and DynamoDB bills each write by the KB of the
// item, again in each index that projects it. Its body is the record's
// JSON — field names, timestamps and ids that repeat (the submission id in
// its stream key and leaf, the session id in its prompt's node ids) — so
// it deflates to about half: a record that grows past 1 KB with its usage
// and cost stays inside one write unit. compact stores a body above
// compactBytes as attrBodyZ (B, raw DEFLATE) when that is smaller; decode
// reads either. Only records whose content is cairn's own metadata are
// compacted; the text a model or tool produced (events, chunks, shared
// strings) is stored as it came.
const (
	attrBodyZ    = "bodyz" // the record as DEFLATE-compressed JSON (B)
	compactBytes = 512
)

// compact returns body (an encode result) with a body above compactBytes
// deflated, when that is smaller.
func compact(body item) item {
	s := getS(body, attrBody)
	if len(s) <= compactBytes {
		return body
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // a valid level: never fails
	w.Write([]byte(s))                             // a bytes.Buffer never fails
	w.Close()
	if buf.Len() >= len(s) {
		return body
	}
	out := with(body)
	delete(out, attrBody)
	out[attrBodyZ] = &types.AttributeValueMemberB{Value: buf.Bytes()}
	return out
}

// bodyText returns the JSON body of it: attrBody, or attrBodyZ inflated.
func bodyText(it item) (string, error) {
	z, ok := it[attrBodyZ].(*types.AttributeValueMemberB)
	if !ok {
		return getS(it, attrBody), nil
	}
	b, err := io.ReadAll(flate.NewReader(bytes.NewReader(z.Value)))
	if err != nil {
		return "", fmt.Errorf("inflating stored record: %w", err)
	}
	return string(b), nil
}
