package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Fingerprint is the hex SHA-256 of the spec's canonical JSON: its fields
// in declaration order under their JSON names, zero fields omitted (so a
// field added later with a zero value leaves existing fingerprints alone).
// Every field counts: a recorded sandbox fits a spec only if the
// fingerprints are equal.
func Fingerprint(spec contracts.SandboxSpec) string {
	// Marshalling a struct of strings, ints and such structs cannot fail,
	// and encoding/json writes struct fields in declaration order: the
	// output is canonical (a nested struct is omitzero, so a zero one is
	// omitted too).
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
