package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/contracts"
)

// CAIRN_SANDBOX_NETWORK and CAIRN_SANDBOX_INTERNET_SECURITY_GROUPS reach
// the fargate provider: on the public network with internet groups a spec
// may ask for network "internet"; on the private one (the default when
// unset) or without the groups it is refused when the session is created.
func TestFargateNetworkFromEnv(t *testing.T) {
	base := func() map[string]string {
		m := fullEnv()
		m["CAIRN_SANDBOX_CLUSTER"] = "cairn"
		m["CAIRN_SANDBOX_TASK_DEFINITION"] = "cairn-sandboxd"
		m["CAIRN_SANDBOX_SUBNETS"] = "subnet-a"
		m["CAIRN_SANDBOX_SECURITY_GROUPS"] = "sg-none"
		m["CAIRN_SANDBOX_KEY_SECRET"] = "env:TEST_SANDBOX_KEY"
		m["TEST_SANDBOX_KEY"] = "0123456789abcdef0123456789abcdef"
		return m
	}
	internet := contracts.SandboxSpec{Network: contracts.NetworkInternet}
	for _, tc := range []struct {
		name, network, groups string
		wantNetwork           string
		internetOK            bool
	}{
		{"unset", "", "", "private", false},
		{"private", "private", "", "private", false},
		{"public without internet groups", "public", "", "public", false},
		{"public", "public", "sg-inet-1, sg-inet-2", "public", true},
	} {
		m := base()
		if tc.network != "" {
			m[backend.EnvSandboxNetwork] = tc.network
		}
		if tc.groups != "" {
			m[backend.EnvSandboxInternetSecurityGroups] = tc.groups
		}
		c, err := backend.FromEnv(env(m))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Fargate.Network != tc.wantNetwork || (tc.groups != "" && len(c.Fargate.InternetSecurityGroups) != 2) {
			t.Errorf("%s: fargate settings %+v", tc.name, c.Fargate)
		}
		// The tools function (which places sandboxes) and every other one
		// (which only checks specs, without ECS) answer alike.
		for fn, serves := range map[string]backend.Serves{"tools": {Sandboxes: sandboxes.Fargate}, "api": {}} {
			rt, err := backend.Boot(context.Background(), env(m), nil, serves)
			if err != nil {
				t.Fatalf("%s, %s: boot: %v", tc.name, fn, err)
			}
			if err := rt.Engine.CheckSandbox(contracts.SandboxSpec{Network: contracts.NetworkNone}); err != nil {
				t.Errorf("%s, %s: network none refused: %v", tc.name, fn, err)
			}
			err = rt.Engine.CheckSandbox(internet)
			if tc.internetOK != (err == nil) || (err != nil && !errors.Is(err, contracts.ErrInvalid)) {
				t.Errorf("%s, %s: network internet: %v, want ok=%v", tc.name, fn, err, tc.internetOK)
			}
			if err := rt.Engine.CheckSandbox(contracts.SandboxSpec{Network: "lan"}); !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("%s, %s: network lan: %v", tc.name, fn, err)
			}
		}
	}
	m := base()
	m[backend.EnvSandboxNetwork] = "dmz"
	if _, err := backend.FromEnv(env(m)); err == nil || !strings.Contains(err.Error(), backend.EnvSandboxNetwork) {
		t.Errorf("unknown network: %v", err)
	}
}
