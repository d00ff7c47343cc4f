package backend

import (
	"testing"

	"github.com/cairnrun/cairn/shared/sandbox/fargate"
)

// The names this package spells without importing fargate (which links
// ECS) are fargate's.
func TestFargateNamesAgree(t *testing.T) {
	if kindFargate != fargate.Kind || networkPrivate != fargate.NetworkPrivate || networkPublic != fargate.NetworkPublic {
		t.Errorf("kind %q/%q, networks %q/%q and %q/%q differ from shared/sandbox/fargate",
			kindFargate, fargate.Kind, networkPrivate, fargate.NetworkPrivate, networkPublic, fargate.NetworkPublic)
	}
}
