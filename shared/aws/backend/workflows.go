package backend

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// Environment of workflows (all optional: without the workflow queue,
// workflows are not served).
const (
	EnvIsolateFunction = "CAIRN_ISOLATE_FUNCTION"   // the isolate Lambda the driver invokes
	EnvSchedulerGroup  = "CAIRN_SCHEDULER_GROUP"    // EventBridge Scheduler group of workflow schedules
	EnvSchedulerRole   = "CAIRN_SCHEDULER_ROLE_ARN" // the role Scheduler assumes to send to the workflow queue
	EnvWorkflowQueue   = "CAIRN_WORKFLOW_QUEUE_ARN" // the workflow queue's ARN (Scheduler's target)
)

// Workflows configures workflows on AWS.
type Workflows struct {
	// IsolateFunction evaluates scripts on AWS; Isolate (a local command,
	// `cairn isolate`) is used instead when set, e.g. by `cairn dev
	// --backend aws`. With neither, workflows are not served.
	IsolateFunction string
	Isolate         []string
	// SchedulerGroup, SchedulerRoleARN and QueueARN register schedules with
	// EventBridge Scheduler; without them the store is the schedule and a
	// local ticker (cairn dev) fires it.
	SchedulerGroup, SchedulerRoleARN, QueueARN string
}

func workflowsFromEnv(getenv func(string) string, urls map[string]string) Workflows {
	for _, q := range []string{contracts.QueueWorkflow, contracts.DLQ(contracts.QueueWorkflow)} {
		if v := getenv(QueueEnv(q)); v != "" {
			urls[q] = v
		}
	}
	return Workflows{
		IsolateFunction: getenv(EnvIsolateFunction), SchedulerGroup: getenv(EnvSchedulerGroup),
		SchedulerRoleARN: getenv(EnvSchedulerRole), QueueARN: getenv(EnvWorkflowQueue),
	}
}

// workflowPorts adds the workflow store, the evaluator and the scheduler
// when the workflow queue and an isolate are configured. The evaluator is
// c.Serves.Evaluator's (the workflow function's scripts.Evaluator); without
// it runs are started, woken and given their nodes' results here, and
// evaluated only by the workflow function.
func workflowPorts(c Config, awsCfg aws.Config, store *dynamo.Store, ports *assemble.Ports, rc *assemble.Config) error {
	if c.QueueURLs[contracts.QueueWorkflow] == "" {
		return nil
	}
	w := c.Workflows
	if len(w.Isolate) == 0 && w.IsolateFunction == "" {
		return nil
	}
	ports.Evaluator = notEvaluated{}
	if c.Serves.Evaluator != nil {
		e, err := c.Serves.Evaluator(c, awsCfg)
		if err != nil {
			return err
		}
		ports.Evaluator = e
	}
	ports.Workflows = store.Workflows()
	if w.SchedulerGroup != "" && w.SchedulerRoleARN != "" && w.QueueARN != "" {
		rc.Scheduler = &schedule.EventBridge{Client: scheduler.NewFromConfig(awsCfg), Group: w.SchedulerGroup, RoleARN: w.SchedulerRoleARN, QueueARN: w.QueueARN}
	}
	return nil
}
