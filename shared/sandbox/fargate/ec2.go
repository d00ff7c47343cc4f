package fargate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cairnrun/cairn/shared/contracts"
)

// EC2API is the one EC2 read of the public network: the public IPv4
// address of a task's network interface (ec2:DescribeNetworkInterfaces;
// DescribeTasks gives only the ENI id and the private address). "" with a
// nil error means the interface has no public address (yet). NewEC2 makes
// one from an aws.Config; tests wrap it.
type EC2API interface {
	PublicIPv4(ctx context.Context, eniID string) (string, error)
}

// maxEC2Answer bounds an EC2 answer read (one interface is a few KiB).
const maxEC2Answer = 1 << 20

// NewEC2 returns an EC2API speaking EC2's query protocol with cfg's
// credentials, region, HTTP client and endpoint (cfg.BaseEndpoint, e.g.
// from AWS_ENDPOINT_URL, else the region's public EC2 endpoint). It makes
// only DescribeNetworkInterfaces, once per call: the provider's wait for
// the task polls it. (One request does not justify the EC2 SDK module,
// which is the size of the rest of the dependencies together.)
func NewEC2(cfg aws.Config) EC2API {
	ep := strings.TrimRight(aws.ToString(cfg.BaseEndpoint), "/")
	if ep == "" {
		suffix := "amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			suffix = "amazonaws.com.cn"
		}
		ep = "https://ec2." + cfg.Region + "." + suffix
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &ec2Query{cfg: cfg, endpoint: ep, hc: hc}
}

type ec2Query struct {
	cfg      aws.Config
	endpoint string
	hc       aws.HTTPClient
}

func (e *ec2Query) PublicIPv4(ctx context.Context, eniID string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("ec2 DescribeNetworkInterfaces %s: %s: %w", eniID, fmt.Sprintf(format, args...), contracts.ErrUnavailable)
	}
	if e.cfg.Region == "" || e.cfg.Credentials == nil {
		return fail("no region or credentials configured")
	}
	form := url.Values{"Action": {"DescribeNetworkInterfaces"}, "Version": {"2016-11-15"}, "NetworkInterfaceId.1": {eniID}}
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint+"/", strings.NewReader(body))
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := e.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fail("credentials: %v", err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ec2", e.cfg.Region, time.Now()); err != nil {
		return fail("signing: %v", err)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fail("%v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEC2Answer))
	if err != nil {
		return fail("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		var er struct {
			Code    string `xml:"Errors>Error>Code"`
			Message string `xml:"Errors>Error>Message"`
		}
		if xml.Unmarshal(raw, &er) == nil && er.Code != "" {
			return fail("%s: %s", er.Code, er.Message)
		}
		return fail("HTTP %d", resp.StatusCode)
	}
	var out struct {
		Interfaces []struct {
			ID       string `xml:"networkInterfaceId"`
			PublicIP string `xml:"association>publicIp"`
		} `xml:"networkInterfaceSet>item"`
	}
	if err := xml.Unmarshal(raw, &out); err != nil {
		return fail("decoding the answer: %v", err)
	}
	for _, ni := range out.Interfaces {
		if ni.ID == eniID {
			return ni.PublicIP, nil
		}
	}
	return fail("no such network interface in the answer")
}
