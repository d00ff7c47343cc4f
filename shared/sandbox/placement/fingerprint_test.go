package placement_test

import (
	"reflect"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func TestFingerprintStable(t *testing.T) {
	spec := contracts.SandboxSpec{Kind: "fargate", CPU: 1024, MemoryMiB: 2048}
	a, b := placement.Fingerprint(spec), placement.Fingerprint(spec)
	if a != b || len(a) != 64 {
		t.Fatalf("fingerprints %q and %q: want equal 64-hex", a, b)
	}
	// Pinned: a changed fingerprint for an unchanged spec would replace
	// every recorded sandbox of a deployment on upgrade.
	if got, want := placement.Fingerprint(contracts.SandboxSpec{}), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"; got != want {
		t.Errorf("Fingerprint(zero spec) = %s, want %s (sha256 of {})", got, want)
	}
}

// Every field of the spec, including ones added later (and those of a
// nested struct, e.g. Limits), changes the fingerprint.
func TestFingerprintChangesWithEveryField(t *testing.T) {
	seen := map[string]string{placement.Fingerprint(contracts.SandboxSpec{}): "zero spec"}
	var each func(path []int, typ reflect.Type, name string)
	each = func(path []int, typ reflect.Type, name string) {
		for i := range typ.NumField() {
			fieldName := name + typ.Field(i).Name
			var spec contracts.SandboxSpec
			f := reflect.ValueOf(&spec).Elem()
			for _, j := range path {
				f = f.Field(j)
			}
			f = f.Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString("x")
			case reflect.Int, reflect.Int64, reflect.Int32:
				f.SetInt(1)
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Struct:
				each(append(append([]int(nil), path...), i), f.Type(), fieldName+".")
				continue
			default:
				t.Fatalf("field %s has kind %s: extend this test", fieldName, f.Kind())
			}
			fp := placement.Fingerprint(spec)
			if other, dup := seen[fp]; dup {
				t.Errorf("setting %s leaves the fingerprint of %s", fieldName, other)
			}
			seen[fp] = fieldName
		}
	}
	each(nil, reflect.TypeFor[contracts.SandboxSpec](), "")
	if len(seen) < 8 {
		t.Errorf("only %d fingerprints: the nested fields were not visited", len(seen))
	}
}
