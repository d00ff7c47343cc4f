package stack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

// routes returns the template's API routes.
func routes(tp *tmpl) []map[string]any {
	var out []map[string]any
	for _, id := range tp.ofType("AWS::ApiGatewayV2::Route") {
		out = append(out, tp.props(id))
	}
	return out
}

// By default every route requires IAM (SigV4) authorization and goes to
// the api function.
func TestAPIDefaultAuthorizationIsIAM(t *testing.T) {
	dev, _, local := stacks(t)
	for _, tp := range []*tmpl{dev, local} {
		rs := routes(tp)
		if len(rs) == 0 {
			t.Fatalf("%s: no routes", tp.name)
		}
		for _, r := range rs {
			if r["AuthorizationType"] != "AWS_IAM" {
				t.Errorf("%s route %v: AuthorizationType %v, want AWS_IAM", tp.name, r["RouteKey"], r["AuthorizationType"])
			}
		}
		integ := tp.ofType("AWS::ApiGatewayV2::Integration")
		if len(integ) != 1 || !refersTo(tp.props(integ[0])["IntegrationUri"], tp.id(tp.s.Functions[stack.FnAPI])) ||
			tp.props(integ[0])["PayloadFormatVersion"] != "2.0" {
			t.Errorf("%s: integrations %v, want one v2.0 to the api function", tp.name, integ)
		}
	}
}

// With an issuer and audience, the routes use a JWT authorizer instead.
func TestAPIJWTAuthorizerWhenConfigured(t *testing.T) {
	_, prod, _ := stacks(t)
	must(t, "jwt authorizer", func() {
		prod.a.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
			"AuthorizerType": "JWT",
			"JwtConfiguration": map[string]any{
				"Issuer": jwtIssuer, "Audience": []any{jwtAudience},
			},
		})
	})
	auth := prod.ofType("AWS::ApiGatewayV2::Authorizer")
	for _, r := range routes(prod) {
		if r["AuthorizationType"] != "JWT" || len(auth) != 1 || js(r["AuthorizerId"]) != ref(auth[0]) {
			t.Errorf("prod route %v: AuthorizationType %v authorizer %s", r["RouteKey"], r["AuthorizationType"], js(r["AuthorizerId"]))
		}
	}
}

// The API's stage throttles every route.
func TestAPIThrottling(t *testing.T) {
	for _, tp := range all(t) {
		stages := tp.ofType("AWS::ApiGatewayV2::Stage")
		if len(stages) != 1 {
			t.Fatalf("%s: stages %v", tp.name, stages)
		}
		rs := obj(tp.props(stages[0])["DefaultRouteSettings"])
		if num(rs["ThrottlingRateLimit"]) <= 0 || num(rs["ThrottlingBurstLimit"]) <= 0 {
			t.Errorf("%s stage: DefaultRouteSettings %s, want rate and burst limits", tp.name, js(rs))
		}
	}
}

// repair runs on an EventBridge rule every minute.
func TestRepairRunsEveryMinute(t *testing.T) {
	for _, tp := range all(t) {
		rules := tp.ofType("AWS::Events::Rule")
		if len(rules) != 1 {
			t.Fatalf("%s: rules %v", tp.name, rules)
		}
		p := tp.props(rules[0])
		targets := list(p["Targets"])
		if p["ScheduleExpression"] != "rate(1 minute)" || p["State"] != "ENABLED" || len(targets) != 1 ||
			js(obj(targets[0])["Arn"]) != getAtt(tp.id(tp.s.Functions[stack.FnRepair]), "Arn") {
			t.Errorf("%s repair rule %s", tp.name, js(p))
		}
	}
}

// The role EventBridge Scheduler assumes may only send to the workflow
// queue, and only the scheduler service (of this account) may assume it.
func TestSchedulerRoleOnlySendsToWorkflowQueue(t *testing.T) {
	for _, tp := range all(t) {
		role := tp.id(tp.s.SchedulerRole)
		sts := tp.statements(role)
		if len(sts) != 1 || js(sts[0].Actions) != `["sqs:SendMessage"]` ||
			js(sts[0].Resources) != js([]string{getAtt(tp.id(tp.s.Queues[stack.QueueWorkflow]), "Arn")}) {
			t.Errorf("%s scheduler role statements %s", tp.name, js(sts))
		}
		trust := list(obj(tp.props(role)["AssumeRolePolicyDocument"])["Statement"])
		if len(trust) != 1 || js(obj(obj(trust[0])["Principal"])["Service"]) != `"scheduler.amazonaws.com"` ||
			!strings.Contains(js(obj(trust[0])["Condition"]), "aws:SourceAccount") {
			t.Errorf("%s scheduler role trust %s", tp.name, js(trust))
		}
		if g := tp.props(tp.id(tp.s.SchedulerGroup)); g["Name"] != tp.s.Props.Prefix {
			t.Errorf("%s schedule group %s", tp.name, js(g))
		}
	}
}

// The api manages schedules only in its group (create, read, update for
// pause and resume, delete), passes only the scheduler role, only to the
// scheduler, and deletes from the table only schedule records.
func TestAPIManagesSchedulesOnlyInItsGroup(t *testing.T) {
	for _, tp := range all(t) {
		var saw, deletes bool
		for _, s := range tp.statements(tp.id(tp.s.Roles[stack.FnAPI])) {
			switch {
			case s.has("dynamodb:DeleteItem"):
				deletes = true
				if len(s.Actions) != 1 || js(s.Resources) != js([]string{getAtt(tp.id(tp.s.Table), "Arn")}) ||
					js(s.Condition) != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["SCHED#*"]}}` {
					t.Errorf("%s api: DeleteItem %v on %s when %s, want alone, on the table, for SCHED# keys only", tp.name, s.Actions, js(s.Resources), js(s.Condition))
				}
			case strings.HasPrefix(s.Actions[0], "scheduler:"):
				saw = true
				if want := `["scheduler:CreateSchedule","scheduler:GetSchedule","scheduler:UpdateSchedule","scheduler:DeleteSchedule"]`; js(s.Actions) != want {
					t.Errorf("%s api: scheduler actions %s, want %s", tp.name, js(s.Actions), want)
				}
				for _, r := range s.Resources {
					if !strings.Contains(r, ":schedule/") || !strings.Contains(r, ref(tp.id(tp.s.SchedulerGroup))) || !strings.HasSuffix(r, `/*"]]}`) {
						t.Errorf("%s api: %v on %s, want schedule/<group>/*", tp.name, s.Actions, r)
					}
				}
			case s.has("iam:PassRole"):
				if js(s.Resources) != js([]string{getAtt(tp.id(tp.s.SchedulerRole), "Arn")}) ||
					!strings.Contains(js(s.Condition), `"iam:PassedToService":"scheduler.amazonaws.com"`) {
					t.Errorf("%s api: PassRole %s %s", tp.name, js(s.Resources), js(s.Condition))
				}
			}
		}
		if !saw || !deletes {
			t.Errorf("%s api: scheduler permissions %v, schedule deletes %v: want both", tp.name, saw, deletes)
		}
	}
}

// The API's access log records every request with its principal, as JSON
// lines into a log group of the stack: with IAM (SigV4) the caller's ARN,
// account and caller id; with the JWT authorizer the token's subject and
// issuer.
func TestAPIAccessLogsRecordThePrincipal(t *testing.T) {
	dev, prod, local := stacks(t)
	for _, c := range []struct {
		tp   *tmpl
		want map[string]string
	}{
		{dev, map[string]string{"principal": "$context.identity.userArn", "accountId": "$context.identity.accountId", "caller": "$context.identity.caller"}},
		{local, map[string]string{"principal": "$context.identity.userArn"}},
		{prod, map[string]string{"principal": "$context.authorizer.claims.sub", "issuer": "$context.authorizer.claims.iss"}},
	} {
		tp := c.tp
		stages := tp.ofType("AWS::ApiGatewayV2::Stage")
		if len(stages) != 1 {
			t.Fatalf("%s: stages %v", tp.name, stages)
		}
		als := obj(tp.props(stages[0])["AccessLogSettings"])
		group := tp.id(tp.s.AccessLogs)
		if js(als["DestinationArn"]) != getAtt(group, "Arn") || tp.res[group].Type != "AWS::Logs::LogGroup" || num(tp.props(group)["RetentionInDays"]) <= 0 {
			t.Errorf("%s stage: access logs to %s, want the stack's log group %s (with retention)", tp.name, js(als["DestinationArn"]), group)
		}
		var fields map[string]string
		if err := json.Unmarshal([]byte(str(als["Format"])), &fields); err != nil {
			t.Errorf("%s stage: access log format %q is not a JSON object of strings: %v", tp.name, als["Format"], err)
			continue
		}
		c.want["requestId"], c.want["status"], c.want["routeKey"], c.want["sourceIp"] = "$context.requestId", "$context.status", "$context.routeKey", "$context.identity.sourceIp"
		for k, v := range c.want {
			if fields[k] != v {
				t.Errorf("%s access log: %s = %q, want %q", tp.name, k, fields[k], v)
			}
		}
		for k, v := range fields {
			if !strings.HasPrefix(v, "$context.") {
				t.Errorf("%s access log: %s = %q is no $context variable", tp.name, k, v)
			}
		}
	}
}
