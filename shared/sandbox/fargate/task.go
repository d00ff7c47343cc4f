package fargate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/smithy-go"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// startedBy marks every sandbox task (ListTasks --started-by finds them).
const startedBy = "cairn-sandbox"

// launch runs a new task for the session and returns a healthy client and
// the record to store. On any failure after RunTask the task is stopped.
func (p *Provider) launch(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (Sandbox, *contracts.SandboxRecord, error) {
	ref := placement.NewRef()
	token := p.cfg.Tokens.Mint(sessionID, ref)
	var cert *placement.Cert
	if p.cfg.TLS {
		c, err := placement.NewCert()
		if err != nil {
			return nil, nil, fmt.Errorf("running sandbox task: %w", err)
		}
		cert = &c
	}
	in := p.runTaskInput(sessionID, spec, placement.HashHex(token), cert)
	if n := overrideSize(in.Overrides); n > maxOverride {
		return nil, nil, fmt.Errorf("running sandbox task: the container overrides take %d bytes, ECS allows %d: %w", n, maxOverride, contracts.ErrInvalid)
	}
	out, err := p.cfg.ECS.RunTask(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("running sandbox task: %w: %w", contracts.ErrUnavailable, err)
	}
	if len(out.Tasks) == 0 || out.Tasks[0].TaskArn == nil {
		return nil, nil, fmt.Errorf("running sandbox task: ECS placed no task (%s): %w", failures(out.Failures), contracts.ErrUnavailable)
	}
	arn := *out.Tasks[0].TaskArn
	p.log.InfoContext(ctx, "sandbox task started", "session_id", sessionID, "task_arn", arn)

	pin := ""
	if cert != nil {
		pin = cert.SHA256
	}
	sb, endpoint, err := p.await(ctx, arn, token, pin)
	if err != nil {
		p.stopQuietly(ctx, sessionID, arn, "cairn: sandbox did not come up")
		return nil, nil, err
	}
	return sb, &contracts.SandboxRecord{
		Kind: Kind, ID: arn, Endpoint: endpoint, TokenRef: ref, Fingerprint: fp, StartedAt: time.Now().UTC(), CertSHA256: pin,
	}, nil
}

// maxOverride is ECS's bound on a RunTask's overrides (8 KiB of JSON).
const maxOverride = 8192

// overrideSize estimates the JSON size of the overrides as ECS counts
// them: every environment pair with its quoting and escapes, plus the
// structure around them (generously).
func overrideSize(o *types.TaskOverride) int {
	n := 256
	for _, co := range o.ContainerOverrides {
		n += 64 + len(aws.ToString(co.Name))
		for _, kv := range co.Environment {
			k, _ := json.Marshal(aws.ToString(kv.Name))
			v, _ := json.Marshal(aws.ToString(kv.Value))
			n += len(`{"name":,"value":},`) + len(k) + len(v)
		}
	}
	return n
}

func (p *Provider) runTaskInput(sessionID string, spec contracts.SandboxSpec, tokenHash string, cert *placement.Cert) *ecs.RunTaskInput {
	over := &types.TaskOverride{ContainerOverrides: []types.ContainerOverride{{
		Name: aws.String(p.cfg.Container),
		Environment: []types.KeyValuePair{
			{Name: aws.String(placement.EnvTokenSHA256), Value: aws.String(tokenHash)},
			{Name: aws.String(placement.EnvIdleTimeout), Value: aws.String(p.cfg.IdleTimeout.String())},
		},
	}}}
	if v := placement.LimitsValue(spec.Limits); v != "" { // sandboxd applies them to every command
		over.ContainerOverrides[0].Environment = append(over.ContainerOverrides[0].Environment,
			types.KeyValuePair{Name: aws.String(placement.EnvLimits), Value: aws.String(v)})
	}
	if cert != nil { // sandboxd serves only TLS with them; commands never see SANDBOXD_*
		over.ContainerOverrides[0].Environment = append(over.ContainerOverrides[0].Environment,
			types.KeyValuePair{Name: aws.String(placement.EnvTLSCert), Value: aws.String(cert.CertPEM)},
			types.KeyValuePair{Name: aws.String(placement.EnvTLSKey), Value: aws.String(cert.KeyPEM)})
	}
	if spec.CPU > 0 {
		over.Cpu = aws.String(strconv.Itoa(spec.CPU))
	}
	if spec.MemoryMiB > 0 {
		over.Memory = aws.String(strconv.Itoa(spec.MemoryMiB))
	}
	groups, public := p.cfg.SecurityGroups, types.AssignPublicIpDisabled
	if spec.Network == contracts.NetworkInternet {
		groups = p.cfg.InternetSecurityGroups
	}
	if p.cfg.Network == NetworkPublic {
		public = types.AssignPublicIpEnabled
	}
	return &ecs.RunTaskInput{
		Cluster:        aws.String(p.cfg.Cluster),
		TaskDefinition: aws.String(p.cfg.TaskDefinition),
		LaunchType:     types.LaunchTypeFargate,
		Count:          aws.Int32(1),
		NetworkConfiguration: &types.NetworkConfiguration{AwsvpcConfiguration: &types.AwsVpcConfiguration{
			Subnets:        p.cfg.Subnets,
			SecurityGroups: groups,
			AssignPublicIp: public,
		}},
		Overrides: over,
		StartedBy: aws.String(startedBy),
		Tags:      []types.Tag{{Key: aws.String(SessionTag), Value: aws.String(sessionID)}},
	}
}

// await waits, within WaitRunning, for the task to be RUNNING (and, on
// the public network, its ENI to have a public IP) and its sandboxd to
// answer with the token over TLS pinned to pin (plain HTTP when pin is
// ""); it returns the client and endpoint.
func (p *Provider) await(ctx context.Context, arn, token, pin string) (Sandbox, string, error) {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.WaitRunning)
	defer cancel()
	timedOut := func(what, status string, last error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		detail := status
		if last != nil {
			detail = strings.TrimPrefix(detail+"; last error: "+last.Error(), "; ")
		}
		return fmt.Errorf("sandbox task %s: %s after %s (%s): %w: %w", arn, what, p.cfg.WaitRunning, detail, contracts.ErrUnavailable, contracts.ErrTimeout)
	}

	var task *types.Task
	status := "not yet visible to DescribeTasks"
	var lastErr error // the last failure not caused by our own deadline
	for task == nil {
		t, err := p.describe(wctx, arn)
		switch {
		case err != nil:
			if wctx.Err() == nil {
				lastErr = err
			}
		case running(t):
			task = t
			continue
		case t != nil && down(t):
			return nil, "", fmt.Errorf("sandbox task %s stopped before it ran (%s): %w", arn, stoppedReason(t), contracts.ErrUnavailable)
		case t != nil:
			status = lastStatus(t)
		}
		if !p.pause(wctx) {
			return nil, "", timedOut("not RUNNING", "last status "+status, lastErr)
		}
	}
	ip := eniDetail(task, "privateIPv4Address")
	if ip == "" {
		return nil, "", fmt.Errorf("sandbox task %s is RUNNING without a private IPv4 address on its ENI: %w", arn, contracts.ErrUnavailable)
	}
	if p.cfg.Network == NetworkPublic {
		eni := eniDetail(task, "networkInterfaceId")
		if eni == "" {
			return nil, "", fmt.Errorf("sandbox task %s is RUNNING without a network interface id on its ENI attachment: %w", arn, contracts.ErrUnavailable)
		}
		ip = ""
		for ip == "" {
			pub, err := p.cfg.EC2.PublicIPv4(wctx, eni)
			switch {
			case err != nil && wctx.Err() == nil:
				lastErr = err
			case err == nil && pub != "":
				ip = pub
				continue
			}
			if !p.pause(wctx) {
				return nil, "", timedOut("no public IPv4 address on its network interface "+eni, "", lastErr)
			}
		}
	}
	endpoint := p.cfg.Endpoint(ip, p.cfg.Port)
	sb, err := p.cfg.Dial(endpoint, token, pin)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox task %s at %s: %w", arn, endpoint, err)
	}
	for {
		pctx, pcancel := context.WithTimeout(wctx, probeTimeout)
		err := placement.Probe(pctx, sb)
		pcancel()
		if err == nil {
			return sb, endpoint, nil
		}
		if wctx.Err() == nil {
			lastErr = err
		}
		if !p.pause(wctx) {
			return nil, "", timedOut("sandboxd not healthy at "+endpoint, "", lastErr)
		}
	}
}

// pause waits PollEvery; false when ctx ended first.
func (p *Provider) pause(ctx context.Context) bool {
	t := time.NewTimer(p.cfg.PollEvery)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// describe returns the task, or nil when ECS does not know it (MISSING).
func (p *Provider) describe(ctx context.Context, arn string) (*types.Task, error) {
	out, err := p.cfg.ECS.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(p.cfg.Cluster), Tasks: []string{arn}})
	if err != nil {
		return nil, fmt.Errorf("describing sandbox task %s: %w: %w", arn, contracts.ErrUnavailable, err)
	}
	for i := range out.Tasks {
		if aws.ToString(out.Tasks[i].TaskArn) == arn {
			return &out.Tasks[i], nil
		}
	}
	return nil, nil
}

// stop stops the task unless ECS reports it stopped or unknown.
func (p *Provider) stop(ctx context.Context, arn, reason string) error {
	task, err := p.describe(ctx, arn)
	if err != nil {
		return err
	}
	if down(task) {
		return nil
	}
	_, err = p.cfg.ECS.StopTask(ctx, &ecs.StopTaskInput{Cluster: aws.String(p.cfg.Cluster), Task: aws.String(arn), Reason: aws.String(reason)})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("stopping sandbox task %s: %w: %w", arn, contracts.ErrUnavailable, err)
	}
	return nil
}

// stopQuietly stops a task we no longer want, even when ctx has ended, and
// only logs a failure: the task stops itself when idle anyway.
func (p *Provider) stopQuietly(ctx context.Context, sessionID, arn, reason string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := p.stop(sctx, arn, reason); err != nil {
		p.log.WarnContext(ctx, "could not stop sandbox task; it stops itself when idle", "session_id", sessionID, "task_arn", arn, "error", err)
		return
	}
	p.log.InfoContext(ctx, "sandbox task stopped", "session_id", sessionID, "task_arn", arn, "reason", reason)
}

func lastStatus(t *types.Task) string {
	if t == nil {
		return "MISSING"
	}
	return aws.ToString(t.LastStatus)
}

// running: RUNNING and meant to stay so.
func running(t *types.Task) bool {
	return t != nil && aws.ToString(t.LastStatus) == "RUNNING" && aws.ToString(t.DesiredStatus) != "STOPPED"
}

// down: gone, stopped or on its way there (it never comes back).
func down(t *types.Task) bool {
	return t == nil || aws.ToString(t.LastStatus) == "STOPPED" || aws.ToString(t.DesiredStatus) == "STOPPED"
}

func stoppedReason(t *types.Task) string {
	if r := aws.ToString(t.StoppedReason); r != "" {
		return r
	}
	return "no reason given"
}

// eniDetail reads a detail (privateIPv4Address, networkInterfaceId) of the
// task's ENI attachment.
func eniDetail(t *types.Task, name string) string {
	for _, a := range t.Attachments {
		if aws.ToString(a.Type) != "ElasticNetworkInterface" {
			continue
		}
		for _, d := range a.Details {
			if aws.ToString(d.Name) == name {
				return aws.ToString(d.Value)
			}
		}
	}
	return ""
}

func failures(fs []types.Failure) string {
	if len(fs) == 0 {
		return "no failure given"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = aws.ToString(f.Reason)
		if d := aws.ToString(f.Detail); d != "" {
			parts[i] += ": " + d
		}
	}
	return strings.Join(parts, "; ")
}

// isNotFound recognises StopTask's answer for a task ECS no longer knows
// (InvalidParameterException "The referenced task was not found").
func isNotFound(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf) || strings.Contains(strings.ToLower(ae.ErrorMessage()), "not found")
}
