package stack

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/jsii-runtime-go"
)

// addAPI: an HTTP API whose every route ($default) goes to the api
// function, behind IAM (SigV4) authorization — or a JWT authorizer when an
// issuer and audience are given — with stage-wide throttling.
func (s *Stack) addAPI() {
	var auth awsapigatewayv2.IHttpRouteAuthorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	if s.Props.JWTIssuer != "" {
		auth = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(s.Props.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(s.Props.JWTAudience)})
	}
	s.API = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(apiName(s.Props.Prefix)),
		Description:        jsii.String("cairn HTTP API v1"),
		DefaultIntegration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiFunction"), s.Functions[FnAPI], nil),
		DefaultAuthorizer:  auth,
		CreateDefaultStage: jsii.Bool(false),
	})
	stage := awsapigatewayv2.NewHttpStage(s.Stack, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    s.API,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit: jsii.Number(s.Props.ThrottleRate), BurstLimit: jsii.Number(float64(s.Props.ThrottleBurst)),
		},
	})
	// Access logs: one JSON line per request, with who made it.
	s.AccessLogs = s.logGroup("ApiAccessLogs", logAPIAccess)
	format, err := json.Marshal(AccessLogFields(s.Props.JWTIssuer != ""))
	if err != nil {
		panic(err) // a map of strings
	}
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: s.AccessLogs.LogGroupArn(),
		Format:         jsii.String(string(format)),
	})
}

// AccessLogFields is the API's access log line (HTTP API $context
// variables): the request, its outcome, and the principal — with IAM
// (SigV4) the caller's ARN, account and access key owner; with a JWT
// authorizer the token's subject and issuer (and the authorizer's error
// when it refused one).
func AccessLogFields(jwt bool) map[string]string {
	f := map[string]string{
		"requestId":        "$context.requestId",
		"time":             "$context.requestTime",
		"method":           "$context.httpMethod",
		"path":             "$context.path",
		"routeKey":         "$context.routeKey",
		"status":           "$context.status",
		"responseLength":   "$context.responseLength",
		"latencyMs":        "$context.responseLatency",
		"integrationError": "$context.integrationErrorMessage",
		"sourceIp":         "$context.identity.sourceIp",
		"userAgent":        "$context.identity.userAgent",
	}
	if jwt {
		f["principal"] = "$context.authorizer.claims.sub"
		f["issuer"] = "$context.authorizer.claims.iss"
		f["authorizerError"] = "$context.authorizer.error"
	} else {
		f["principal"] = "$context.identity.userArn"
		f["accountId"] = "$context.identity.accountId"
		f["caller"] = "$context.identity.caller"
	}
	return f
}

// addRepairSchedule runs repair every minute.
func (s *Stack) addRepairSchedule() {
	awsevents.NewRule(s.Stack, jsii.String("RepairEveryMinute"), &awsevents.RuleProps{
		Description: jsii.String("cairn repair: re-drive stuck submissions, drain the DLQs"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		// A missed minute is covered by the next one: no retries.
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnRepair], &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0),
		})},
	})
}

// addSchedulerTarget: the EventBridge Scheduler group the api creates
// workflow schedules in, and the role those schedules assume, which may do
// one thing: send a firing to the workflow queue.
func (s *Stack) addSchedulerTarget() {
	s.SchedulerGroup = awsscheduler.NewCfnScheduleGroup(s.Stack, jsii.String("Schedules"), &awsscheduler.CfnScheduleGroupProps{
		Name: jsii.String(scheduleGroupName(s.Props.Prefix)),
	})
	s.SchedulerRole = awsiam.NewRole(s.Stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"aws:SourceAccount": s.Account()}},
		}),
		Description: jsii.String("cairn schedules: send firings to the workflow queue"),
	})
	s.SchedulerRole.AddToPrincipalPolicy(statement("FireWorkflow", []string{"sqs:SendMessage"}, []*string{s.Queues[QueueWorkflow].QueueArn()}))
}
