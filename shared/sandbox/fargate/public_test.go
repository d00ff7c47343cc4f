package fargate_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// ec2Call makes one signed EC2 query request to the endpoint and returns
// the answer's body (failing the test on a non-200 answer).
func ec2Call(t *testing.T, cfg aws.Config, form url.Values) []byte {
	t.Helper()
	ctx := context.Background()
	form.Set("Version", "2016-11-15")
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(aws.ToString(cfg.BaseEndpoint), "/")+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ec2", cfg.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("EC2 %s: %v", form.Get("Action"), err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("EC2 %s: %s\n%s", form.Get("Action"), resp.Status, raw)
	}
	return raw
}

// assignPublicIP is what Fargate does for AssignPublicIp ENABLED and
// moto's ECS does not: an Elastic IP of moto's EC2 associated with the
// task's ENI, so DescribeNetworkInterfaces reports it as the ENI's public
// address.
func (h *harness) assignPublicIP(eni string) string {
	h.t.Helper()
	if eni == "" {
		h.t.Errorf("RunTask's task has no networkInterfaceId")
		return ""
	}
	var a struct {
		PublicIP     string `xml:"publicIp"`
		AllocationID string `xml:"allocationId"`
	}
	if err := xml.Unmarshal(ec2Call(h.t, h.env.cfg, url.Values{"Action": {"AllocateAddress"}, "Domain": {"vpc"}}), &a); err != nil || a.PublicIP == "" {
		h.t.Fatalf("AllocateAddress: %+v %v", a, err)
	}
	ec2Call(h.t, h.env.cfg, url.Values{"Action": {"AssociateAddress"}, "AllocationId": {a.AllocationID}, "NetworkInterfaceId": {eni}})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.publicIPs == nil {
		h.publicIPs = map[string]string{}
	}
	h.publicIPs[eni] = a.PublicIP
	return a.PublicIP
}

// internetSG creates a second security group in moto (the stack's
// SandboxInternetSG).
func (h *harness) internetSG() string {
	h.t.Helper()
	var out struct {
		ID string `xml:"groupId"`
	}
	raw := ec2Call(h.t, h.env.cfg, url.Values{"Action": {"CreateSecurityGroup"}, "GroupName": {awstest.Name(h.t, "sandbox-internet")},
		"GroupDescription": {"sandboxes with network internet"}})
	if err := xml.Unmarshal(raw, &out); err != nil || !strings.HasPrefix(out.ID, "sg-") {
		h.t.Fatalf("CreateSecurityGroup: %s (%v)", raw, err)
	}
	return out.ID
}

// countingEC2 is the provider's real EC2 client (query protocol, against
// moto) with the ENI ids it was asked about kept.
type countingEC2 struct {
	inner fargate.EC2API
	mu    sync.Mutex
	asked []string
}

func (c *countingEC2) PublicIPv4(ctx context.Context, eni string) (string, error) {
	c.mu.Lock()
	c.asked = append(c.asked, eni)
	c.mu.Unlock()
	return c.inner.PublicIPv4(ctx, eni)
}

func (c *countingEC2) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

// public returns a provider on the public network with its EC2 counter.
func (h *harness) public(internetSGs []string, mod ...func(*fargate.Config)) (*fargate.Provider, *countingECS, *countingEC2) {
	h.t.Helper()
	ec := &countingEC2{inner: fargate.NewEC2(h.env.cfg)}
	p, c := h.provider(append([]func(*fargate.Config){func(cfg *fargate.Config) {
		cfg.Network, cfg.EC2, cfg.InternetSecurityGroups = fargate.NetworkPublic, ec, internetSGs
	}}, mod...)...)
	return p, c, ec
}

func certOf(t *testing.T, pemText string) []byte {
	t.Helper()
	b, _ := pem.Decode([]byte(pemText))
	if b == nil {
		t.Fatalf("not PEM: %q", pemText)
	}
	if _, err := x509.ParseCertificate(b.Bytes); err != nil {
		t.Fatal(err)
	}
	return b.Bytes
}

// On the public network RunTask assigns a public IP and the spec's
// network picks the security groups; the endpoint is the ENI's public IP
// as EC2 reports it; the task gets a certificate of its own, whose
// fingerprint is recorded and pinned.
func TestPublicNetworkPlacesWithPublicIPAndPinnedTLS(t *testing.T) {
	h := newHarness(t, "ses_none", "ses_net")
	inet := h.internetSG()
	p, c, ec := h.public([]string{inet})

	write(t, acquire(t, p, "ses_none", contracts.SandboxSpec{}), "a.txt", "over pinned tls")
	in := c.lastRun()
	vpc := in.NetworkConfiguration.AwsvpcConfiguration
	if vpc.AssignPublicIp != types.AssignPublicIpEnabled || len(vpc.SecurityGroups) != 1 || vpc.SecurityGroups[0] != h.env.sg {
		t.Errorf("network none: awsvpc %+v, want a public IP and the none group %s", vpc, h.env.sg)
	}
	rec := h.record("ses_none")
	certPEM, keyPEM := envValue(in, placement.EnvTLSCert), envValue(in, placement.EnvTLSKey)
	if certPEM == "" || !strings.Contains(keyPEM, "PRIVATE KEY") {
		t.Fatalf("RunTask overrides carry no certificate/key: %q %q", certPEM, keyPEM)
	}
	sum := sha256.Sum256(certOf(t, certPEM))
	if rec.CertSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("recorded CertSHA256 %q, want the SHA-256 of the certificate sent to the task %x", rec.CertSHA256, sum)
	}
	tk := h.world.get(rec.ID)
	if tk == nil || !strings.HasPrefix(rec.Endpoint, "https://") || rec.Endpoint != tk.endpoint {
		t.Fatalf("record %+v, task %+v: want the https endpoint of the task's sandboxd", rec, tk)
	}
	// The endpoint was reached through the public IP EC2 reported for the
	// task's own ENI (the world answers only at the address RunTask's ENI
	// was given).
	asked := ec.calls()
	if len(asked) == 0 || h.publicIPs[asked[0]] != tk.ip {
		t.Errorf("EC2 asked about %v; public IPs %v; task reached at %s", asked, h.publicIPs, tk.ip)
	}
	if logs := h.logs.String(); strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, strings.TrimSpace(keyPEM)) {
		t.Errorf("the provider logged the key")
	}

	// network internet: the internet group, a fingerprint of its own.
	acquire(t, p, "ses_net", contracts.SandboxSpec{Network: contracts.NetworkInternet})
	vpc = c.lastRun().NetworkConfiguration.AwsvpcConfiguration
	if vpc.AssignPublicIp != types.AssignPublicIpEnabled || len(vpc.SecurityGroups) != 1 || vpc.SecurityGroups[0] != inet {
		t.Errorf("network internet: awsvpc %+v, want a public IP and the internet group %s", vpc, inet)
	}
	if net := h.record("ses_net"); net.Fingerprint == rec.Fingerprint || net.CertSHA256 == rec.CertSHA256 || net.CertSHA256 == "" {
		t.Errorf("internet record %+v vs none %+v: want another fingerprint and certificate", net, rec)
	}
}

// Another process reconnects from the record over TLS pinned to the
// recorded fingerprint: a record whose pin is not the task's certificate
// is not trusted — the task is replaced, never spoken to in clear.
func TestPublicReuseIsPinned(t *testing.T) {
	h := newHarness(t, "ses_a")
	p1, _, _ := h.public(nil)
	write(t, acquire(t, p1, "ses_a", contracts.SandboxSpec{}), "notes.txt", "kept")
	rec := h.record("ses_a")

	var pins []string
	var mu sync.Mutex
	dialSpy := func(cfg *fargate.Config) {
		cfg.Dial = func(endpoint, token, pin string) (fargate.Sandbox, error) {
			mu.Lock()
			pins = append(pins, pin)
			mu.Unlock()
			return remote.New(endpoint, token, remote.Options{CertSHA256: pin, Retries: -1})
		}
	}
	p2, c2, ec2 := h.public(nil, dialSpy)
	if got := read(t, acquire(t, p2, "ses_a", contracts.SandboxSpec{}), "notes.txt"); got != "kept" {
		t.Fatalf("read %q", got)
	}
	if runs, _, _ := c2.counts(); runs != 0 || len(ec2.calls()) != 0 || len(pins) != 1 || pins[0] != rec.CertSHA256 {
		t.Fatalf("reconnect: %d RunTask, EC2 %v, pins %v; want none, none, [%s]", runs, ec2.calls(), pins, rec.CertSHA256)
	}

	// The record now pins another certificate (as if another server held
	// the address): the recorded task fails the pin and is replaced.
	other, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	forged := *rec
	forged.CertSHA256 = other.SHA256
	if _, err := placement.Replace(context.Background(), h.store, "ses_a", rec, &forged); err != nil {
		t.Fatal(err)
	}
	p3, c3, _ := h.public(nil)
	sb := acquire(t, p3, "ses_a", contracts.SandboxSpec{})
	now := h.record("ses_a")
	if runs, _, _ := c3.counts(); runs != 1 || now.ID == rec.ID || !c3.stopped(rec.ID) {
		t.Fatalf("forged pin: %d RunTask, record %s (old %s), old stopped %v; want a replacement", runs, now.ID, rec.ID, c3.stopped(rec.ID))
	}
	if !strings.Contains(h.logs.String(), "unhealthy") || !strings.Contains(h.logs.String(), "pinned") {
		t.Errorf("the replacement should be logged with the pin failure:\n%s", h.logs.String())
	}
	if _, err := sb.Stat(context.Background(), "notes.txt"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("the replacement is a new task: %v", err)
	}
}

// The private network keeps plain HTTP (a record without a pin) unless
// TLS is switched on; a provider with TLS on does not trust an unpinned
// record (its token would travel in clear) and replaces the task.
func TestPrivateNetworkTLSSwitch(t *testing.T) {
	h := newHarness(t, "ses_plain", "ses_tls")
	p, c := h.provider()
	acquire(t, p, "ses_plain", contracts.SandboxSpec{})
	plain := h.record("ses_plain")
	if plain.CertSHA256 != "" || !strings.HasPrefix(plain.Endpoint, "http://") || envValue(c.lastRun(), placement.EnvTLSCert) != "" ||
		c.lastRun().NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp != types.AssignPublicIpDisabled {
		t.Fatalf("private network, TLS off: record %+v, RunTask %+v", plain, c.lastRun().NetworkConfiguration.AwsvpcConfiguration)
	}

	pt, ct := h.provider(func(cfg *fargate.Config) { cfg.TLS = true })
	write(t, acquire(t, pt, "ses_tls", contracts.SandboxSpec{}), "x.txt", "x")
	rec := h.record("ses_tls")
	if rec.CertSHA256 == "" || !strings.HasPrefix(rec.Endpoint, "https://") ||
		ct.lastRun().NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp != types.AssignPublicIpDisabled {
		t.Fatalf("private network, TLS on: record %+v", rec)
	}

	// The unpinned record of ses_plain, met by a provider with TLS on.
	acquire(t, pt, "ses_plain", contracts.SandboxSpec{})
	now := h.record("ses_plain")
	if now.ID == plain.ID || now.CertSHA256 == "" || !ct.stopped(plain.ID) {
		t.Fatalf("unpinned record under TLS: now %+v (old %s stopped %v), want a pinned replacement", now, plain.ID, ct.stopped(plain.ID))
	}
}

func TestCheckNetwork(t *testing.T) {
	base := fargate.Config{ECS: &countingECS{}, Cluster: "c", TaskDefinition: "td", Container: "x", Subnets: []string{"s"},
		SecurityGroups: []string{"sg-none"}, Sessions: &sessionsHook{}, Tokens: placement.Tokens{Key: testKey}}
	private := base
	publicNoSG := base
	publicNoSG.Network, publicNoSG.EC2 = fargate.NetworkPublic, &countingEC2{}
	public := publicNoSG
	public.InternetSecurityGroups = []string{"sg-internet"}
	for _, tc := range []struct {
		name    string
		cfg     fargate.Config
		network string
		ok      bool
	}{
		{"private, default", private, "", true},
		{"private, none", private, contracts.NetworkNone, true},
		{"private, internet", private, contracts.NetworkInternet, false},
		{"public without internet groups, none", publicNoSG, contracts.NetworkNone, true},
		{"public without internet groups, internet", publicNoSG, contracts.NetworkInternet, false},
		{"public, internet", public, contracts.NetworkInternet, true},
		{"public, unknown", public, "lan", false},
	} {
		p, err := fargate.New(tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = p.Check(contracts.SandboxSpec{Kind: fargate.Kind, Network: tc.network})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, contracts.ErrInvalid)) {
			t.Errorf("%s: Check = %v, want ok=%v (else ErrInvalid)", tc.name, err, tc.ok)
		}
		if !tc.ok {
			t.Logf("%s: %v", tc.name, err)
			// Acquire refuses it too, before calling ECS.
			if _, err := p.Acquire(context.Background(), "ses_x", contracts.SandboxSpec{Network: tc.network}); !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("%s: Acquire = %v, want ErrInvalid", tc.name, err)
			}
		}
	}
	// The router asks the provider at session creation.
	p, _ := fargate.New(private)
	r := &placement.Router{Default: fargate.Kind, Kinds: map[string]contracts.SandboxProvider{fargate.Kind: p}}
	if err := r.Check(contracts.SandboxSpec{Network: contracts.NetworkInternet}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("router Check of internet on private: %v", err)
	}

	for name, cfg := range map[string]fargate.Config{
		"public without EC2": func() fargate.Config { c := base; c.Network = fargate.NetworkPublic; return c }(),
		"unknown network":    func() fargate.Config { c := base; c.Network = "dmz"; return c }(),
	} {
		if _, err := fargate.New(cfg); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("New, %s: %v, want ErrInvalid", name, err)
		}
	}
}

// The EC2 client answers an unknown interface with an error, not "".
func TestEC2UnknownInterface(t *testing.T) {
	cfg := awstest.Config(t)
	ip, err := fargate.NewEC2(cfg).PublicIPv4(context.Background(), "eni-0123456789abcdef0")
	if err == nil || ip != "" || !errors.Is(err, contracts.ErrUnavailable) {
		t.Fatalf("unknown ENI: %q, %v", ip, err)
	}
	t.Log(err)
}
