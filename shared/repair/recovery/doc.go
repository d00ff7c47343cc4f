// Package recovery classifies an unfinished submission from its journal
// record and what the stores hold, and names the one action that resumes it
// (docs/DESIGN.md §3).
//
// It owns the recovery states, their actions and two functions:
// ClassifySubmission, pure (no I/O, no clock: the time comes in the
// Evidence), and Gather, which reads the Evidence from the stores. It never
// performs an action itself — the caller (shared/repair) does, through the
// phase handlers of shared/turn, which re-read the journal and act on what
// it says.
//
// It may import shared/contracts, shared/journal and the standard library.
//
// # States
//
// Checked in this order; the first that applies wins. A FAILED reason
// starts with its state's name.
//
//	state                        | evidence                                           | action
//	-----------------------------+----------------------------------------------------+----------------------------------------
//	terminal                     | COMMITTED, FAILED or CANCELLED                     | none
//	cancel_requested             | a cancel was asked for (Cancel set)                | finish_cancel (end it CANCELLED, start the next)
//	poison                       | a wake-up of it was dead-lettered (not the model   | fail "poison: <queue> message …"
//	                             | message of a COMMIT record's step: its commit ran  |
//	                             | out of that message's deliveries — classified on)  |
//	leased                       | another owner's lease is live                      | wait (the holder works on it)
//	parked_expired               | TOOLS, a pending approval past its expiry          | deny_expired (deny it, wake tools)
//	parked                       | TOOLS, pending approvals with time left            | wait (a decision or its timeout)
//	progressing                  | no lease, advanced less than StuckAfter ago        | wait (its wake-up is in flight)
//	attempts_exhausted           | attempts since AttemptFloor ≥ MaxAttempts          | fail "attempts_exhausted:<phase> step n"
//	leaf_missing                 | the record's leaf node is not in the transcript    | fail "leaf_missing:<phase> step n …"
//	waiting_behind_another       | ACCEPTED, the session runs another turn            | wait (its commit starts this one)
//	not_started                  | ACCEPTED, the session is free (or its claim stuck) | start_session (begin, enqueue model)
//	model_not_started            | MODEL, no stream key                               | enqueue_model
//	stream_incomplete            | MODEL, stream key without completion marker        | new_attempt (enqueue model: new attempt, new key; the partial stream stays for audit, never replayed)
//	stream_complete_not_recorded | MODEL, stream complete, not advanced               | enqueue_model (the node is built from the stored stream; no model call)
//	tools_pending                | TOOLS, no call has a result                        | enqueue_tools (run them)
//	tools_partly_done            | TOOLS, some results, the missing ones re-runnable  | enqueue_tools (run only the missing ones)
//	mutating_interrupted         | TOOLS, a mutating call "started" with no result    | enqueue_tools (it is not re-run: "interrupted — outcome unknown"; the missing read-only ones re-run)
//	tools_done_not_advanced      | TOOLS, every call has a result                     | enqueue_tools (write the tool node, advance to the next model step)
//	final_not_committed          | COMMIT (final answer recorded)                     | enqueue_commit
//	unknown                      | a phase this package does not know                 | none
//
// A tool whose effect is unknown (not in the bound toolset) counts as
// mutating, as the tools handler treats it.
//
// # Usage
//
//	ev, err := recovery.Gather(ctx, journal, transcript, streams, registry, sess, sub, now)
//	ev.StuckAfter, ev.MaxAttempts = time.Minute, 5
//	c := recovery.ClassifySubmission(sub, ev)
//	switch c.Action { case recovery.ActionEnqueueModel: … }
package recovery
