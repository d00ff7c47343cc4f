// Package workflowtest is the conformance suite for contracts.WorkflowStore.
// Every workflow store adapter runs it.
//
// It may import shared/contracts, shared/testkit/conformance/internal/unique
// and the standard library (testing included).
//
// The suite checks each rule of the WorkflowStore contract: CreateWorkflow
// and CreateSchedule refuse a taken id (ErrExists) and Get* report
// ErrNotFound; ListWorkflows lists one owner's workflows (or, for "",
// everyone's) newest id first up to a limit, also one whose script is a
// claim check; CreateRun and PutNode are create-if-absent (the existing
// record comes back unchanged with created=false, also when 8 callers race
// on one id); UpdateRun is conditional on Version (the winner stores
// expected+1, a stale writer gets ErrConflict and changes nothing, an
// absent run is ErrNotFound); ListRuns lists a workflow's runs newest
// StartedAt first up to a limit; ListUnfinishedRuns lists only RUNNING runs,
// oldest UpdatedAt first (a run ended by an update leaves, a touched one
// moves back) up to a limit; SetNodeResult keeps the first result and
// reports ErrNotFound for an absent node; ListNodes returns a run's nodes in
// Seq order with their results, across several pages (250 nodes);
// UpdateSchedule replaces a schedule (pause and resume round-trip, paused
// schedules stay listed), is ErrNotFound for an absent one and never
// creates it; DeleteSchedule removes one (Get is ErrNotFound, List leaves
// it out), succeeds again for an absent one, and 8 updates racing a delete
// never bring the schedule back. It also checks that big records (a run's
// Input and Result of ~300 KiB, a node prompt of ~200 KiB, a schedule's
// Input of 250 KiB through an update) and JSON values round-trip byte for
// byte and times to the nanosecond.
//
// A created run starts at Version 1, as a created submission does.
// Timestamps are compared in UTC: an adapter need not keep the offset.
// Ids are unique per test, so the suite may run against a shared real
// backend.
//
// # Usage
//
//	func TestWorkflowConformance(t *testing.T) {
//		workflowtest.Run(t, func(t *testing.T) contracts.WorkflowStore {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s.Workflows() // Store already has the transcript port's PutNode
//		})
//	}
package workflowtest
