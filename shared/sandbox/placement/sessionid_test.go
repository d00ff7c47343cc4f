package placement_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func TestCheckSessionID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"ses_0193a4", true},
		{"a.b-c_D9", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"a/b", false},
		{"a b", false},
		{"sé", false},
		{strings.Repeat("x", 129), false},
	} {
		err := placement.CheckSessionID(tc.id)
		if tc.ok && err != nil {
			t.Errorf("CheckSessionID(%q) = %v, want nil", tc.id, err)
		}
		if !tc.ok && !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("CheckSessionID(%q) = %v, want ErrInvalid", tc.id, err)
		}
	}
}
