// Package dynamo is cairn's DynamoDB adapter: contracts.JournalStore,
// TranscriptStore, StreamStore, EventLog and (Store.Workflows)
// WorkflowStore on ONE table, with record bodies
// above a threshold claim-checked into a contracts.BlobStore (S3 in
// production, see package s3blob). The AWS assembly uses it, the embedded
// one never does.
//
// It may import shared/contracts, the standard library and the AWS SDK.
//
// Every record is its JSON in attribute body (S), or — when the JSON is
// larger than Options.ClaimCheckBytes (default 100 KiB; an item holds at
// most 400 KB) — stored in the BlobStore under "sha256-<hex of the JSON>"
// with the key in attribute blob. Reads follow the reference transparently.
// Beside the body an item carries only what keys, indexes and conditions
// need, and (write_id) what tells a retried write from a conflict.
//
// One copy of each large byte (shared.go): in a record up to the claim
// check threshold, every JSON string literal above SharedStringBytes
// (1 KiB) — a final answer, a tool's output — is stored once by content
// hash (up to 8 KiB in the item CAS#sha256-<hex> / CAS, larger in the
// BlobStore), and the body keeps a placeholder, the item the string set
// cas naming its refs. The answer in the completion marker, the assistant
// node, the submission record and the committed event is then one item.
//
// # Key schema
//
// Table: pk (S, HASH) + sk (S, RANGE), on-demand. Indexes:
//
//   - gsi1 (global, sparse, projection ALL): gsi1pk (S, HASH) + gsi1sk (S,
//     RANGE). Only sessions, NON-TERMINAL submissions, workflows, RUNNING
//     workflow runs and schedules carry gsi1pk, in one of 8 shards (fnv32a(id) % 8)
//     so no single index partition is hot; a list queries the 8 shards
//     concurrently and merges.
//   - lsi1 (local, sparse, projection ALL): pk + lsk (S, RANGE).
//   - TTL on attribute ttl (epoch seconds): stream items and events, Options.TTL
//     (default 7 days) after the write, by Options.Clock.
//
// # Items and access patterns
//
//	item            pk               sk                    other attributes                                  used by
//	session         SESS#<sess>      SESSION               body|blob, version(N), write_id,                  CreateSession (Put, attribute_not_exists, ALL_OLD),
//	                                                       gsi1pk=SESSIONS#<0-7>, gsi1sk=<sess>,             GetSession (GetItem, consistent),
//	                                                       owner (when set)                                  UpdateSession (Put, version = :expected, ALL_OLD),
//	                                                                                                         ListSessions (gsi1, 8 shards, newest id first;
//	                                                                                                         an owner's: FilterExpression owner = :o, paged
//	                                                                                                         on past the pre-filter Limit)
//	submission      SESS#<sess>      SUB#<sub>             body|bodyz|blob, version(N), phase, write_id,           CreateSubmission (Put, attribute_not_exists),
//	                                                       ACCEPTED only: lsk=ACCEPTED#<sub>,
//	                                                       non-terminal only: gsi1pk=UNFINISHED#<0-7>,       GetSubmission (GetItem, consistent),
//	                                                       gsi1sk=<sub>, updated=<updated_at UTC, ns,        UpdateSubmission (Put, version = :expected, ALL_OLD),
//	                                                       fixed width>
//	                                                                                                         ListSubmissions (Query sk begins_with SUB#,
//	                                                                                                         or, ACCEPTED, lsi1 lsk begins_with ACCEPTED#,
//	                                                                                                         or sk begins_with SUB# filtered on phase;
//	                                                                                                         consistent),
//	                                                                                                         ListUnfinished (gsi1 keys + updated, 8 shards
//	                                                                                                         read whole, oldest updated first; then
//	                                                                                                         BatchGetItem of those, consistent)
//	sub pointer     SUB#<sub>        SUB                   session, sub, write_id                            GetSubmission / UpdateSubmission without a
//	                                                       [, body|blob when no idem key]                    session id (GetItem, cached); id uniqueness
//	idempotency     SESS#<sess>      IDEM#<key>            session, sub, body|blob (the creation record),    CreateSubmission (Put, attribute_not_exists,
//	                                                       write_id                                          ALL_OLD)
//	tool record     SUB#<sub>        TOOL#<step:010>#<call> started(BOOL), body|blob (the ToolResult)        MarkToolStarted (Update SET started),
//	                                                                                                         PutToolResult (Update, attribute_not_exists(body|blob)),
//	                                                                                                         ToolRecords (Query begins_with, consistent)
//	event           SUB#<sub>        EVT#<key>             body|blob, seq(N), lsk=EVT#<seq:020>, ttl         AppendEvents (Put, attribute_not_exists),
//	                                                                                                         ListEvents (lsi1 lsk BETWEEN, consistent)
//	text_delta      SUB#<sub>        EVS#<seq:020>         body|blob, ekey=<key>, seq(N), ttl (no lsk)     AppendEvents (Put, attribute_not_exists; a key
//	                                                                                                         this Store appended is skipped), ListEvents
//	                                                                                                         (sk BETWEEN, consistent, merged by seq)
//	event counter   SUB#<sub>        EVTSEQ                n(N), ttl                                         AppendEvents (Update ADD n: a block of 64 seqs;
//	                                                                                                         then a consistent GetItem per append while
//	                                                                                                         n still ends the Store's block)
//	node            NODE#<node>      NODE                  body|blob, parent                                 PutNode (Put, attribute_not_exists),
//	                                                                                                         GetNode, Path (GetItem per hop, consistent)
//	stream chunk    STREAM#<key>     CHUNK#<seq:010>       body|blob (one chunk, or n(N) of them: a flush),  PutChunks (Put, attribute_not_exists: one item
//	                                                       ttl                                               per call),
//	                                                                                                         GetStream (Query pk, consistent)
//	stream done     STREAM#<key>     DONE                  body|blob, ttl                                    Complete (Put, attribute_not_exists), GetStream
//	shared string   CAS#<sha256-hex> CAS                   v (a JSON string literal, quotes included)        encode (GetItem, then Put attribute_not_exists,
//	                                                                                                         before the item naming it), decode (GetItem)
//	workflow        WF#<wf>          WORKFLOW              body|blob, write_id,                              CreateWorkflow (Put, attribute_not_exists, ALL_OLD),
//	                                                       gsi1pk=WORKFLOWS#<0-7>, gsi1sk=<wf>,              GetWorkflow (GetItem, consistent),
//	                                                       owner (when set)                                  ListWorkflows (gsi1, 8 shards, newest id first;
//	                                                                                                         an owner's: FilterExpression owner = :o)
//	run             RUN#<run>        RUN                   body|blob, version(N), write_id,                  CreateRun (Put, attribute_not_exists, ALL_OLD =
//	                                                       RUNNING only: gsi1pk=RUNS_UNFINISHED#<0-7>,       the existing run), GetRun (GetItem, consistent),
//	                                                       gsi1sk=<run>, updated=<updated_at UTC, ns,        UpdateRun (Put, version = :expected, ALL_OLD),
//	                                                       fixed width>                                      ListUnfinishedRuns (as ListUnfinished)
//	run pointer     WF#<wf>          RUN#<started_at UTC,  run                                               CreateRun (Put, attribute_not_exists, after the
//	                                 ns, fixed width>#<run>                                                  run; again by every duplicate CreateRun),
//	                                                                                                         ListRuns (Query descending, consistent, then
//	                                                                                                         BatchGetItem of the runs, consistent)
//	workflow node   RUN#<run>        NODE#<node>           body|blob (without the result), seq(N), write_id, PutNode (Put, attribute_not_exists, ALL_OLD =
//	                                                       lsk=NODE#<seq:010>#<node>,                        the existing node; keyed by id, so the same id
//	                                                       once set: result|result_blob (the NodeResult)     at another seq is the same node),
//	                                                                                                         SetNodeResult (Update, attribute_exists(pk) AND
//	                                                                                                         attribute_not_exists(result|result_blob)),
//	                                                                                                         ListNodes (lsi1 lsk begins_with NODE#, consistent)
//	schedule        SCHED#<id>       SCHEDULE              body|blob, gsi1pk=SCHEDULES#<0-7>, gsi1sk=<id>,   CreateSchedule (Put, attribute_not_exists, ALL_OLD),
//	                                                       write_id
//	                                                                                                         GetSchedule (GetItem, consistent),
//	                                                                                                         ListSchedules (gsi1, 8 shards, id order),
//	                                                                                                         UpdateSchedule (Put, attribute_exists(pk):
//	                                                                                                         never resurrects a deleted one),
//	                                                                                                         DeleteSchedule (DeleteItem, unconditional)
//
// Every Query follows LastEvaluatedKey until its limit is met.
//
// # Writes and consistency
//
//   - Sessions and submissions advance with one PutItem conditional on
//     version = :expected (storing expected+1), with
//     ReturnValuesOnConditionCheckFailure=ALL_OLD: the returned item (or
//     its absence) tells ErrConflict from ErrNotFound without a second
//     read. A record is addressed by (SessionID, ID); an update carrying
//     another session id than the one it was created with is ErrNotFound.
//   - A write whose answer was lost is not a conflict (mine.go). DynamoDB
//     may apply a write and the answer never arrive (timeout, reset, 500);
//     the SDK then sends the same request again, and its condition fails
//     on the item the first attempt stored. So every conditional write
//     whose failure means something — the versioned puts (UpdateSession,
//     UpdateSubmission, UpdateRun) and the create-if-absent claims
//     (CreateSession, CreateSubmission's three items, CreateWorkflow,
//     CreateSchedule, CreateRun, Workflows.PutNode) — stamps its item with
//     a write id (attribute write_id, fresh per call, the same in every SDK
//     attempt) and reads the ALL_OLD item: the same write id, body|blob and
//     version means "already mine" and the call returns what a success
//     returns; anything else (a later writer moved the item on) keeps
//     ErrConflict / ErrExists / created=false. A completer of a
//     half-created submission writes its pointer and record with the
//     claim's write id, so the creator finds them its own. First-wins
//     writes (events, chunks, completion markers, transcript nodes,
//     pointers, tool and node results) already answer the same whoever
//     wrote first; MarkToolStarted is unconditional; the event counter's
//     ADD, retried, skips seqs (a gap, never a duplicate).
//   - CreateSubmission uses idempotent ordering, not a transaction (see
//     create.go): claim (IDEM#<key>, else the pointer) → pointer → record,
//     each attribute_not_exists; the claim carries the creation record, so
//     a duplicate that finds a claim without its record (a crashed or
//     in-flight creator) completes it and returns it. Same id or same
//     (session, key) twice → the existing submission, created=false.
//   - Terminal writes omit gsi1pk/gsi1sk, so the submission (or the
//     workflow run) leaves the repair index; a phase change rewrites lsk.
//     An unfinished record's index key is its id, which its writes do not
//     move (a moved key is a delete and a put in the index, two writes;
//     an entry rewritten in place is one): the order by update time comes
//     from the projected attribute updated, so ListUnfinished reads every
//     entry's keys and updated (a projection) to choose the oldest, then
//     reads those records by key.
//   - Reads by key, ListSubmissions, ToolRecords, ListEvents and GetStream
//     are strongly consistent (base table or LSI), and so are ListRuns and
//     ListNodes. ListSessions, ListUnfinished, ListUnfinishedRuns and
//     ListSchedules read the GSI and are eventually consistent: a session
//     created a moment ago may be missing, a submission or run finished a
//     moment ago may still be listed (its next conditional write tells).
//   - A submission record's body above 512 B is stored deflated (bodyz, B;
//     compact.go): it is rewritten at every phase and lease of its turn,
//     and stays inside one write unit. decode reads body, bodyz or blob.
//   - AppendEvents reserves seqs with one ADD on the counter, then puts the
//     events in order, each attribute_not_exists on EVT#<key>: a repeated
//     key is a no-op and its reserved seq a gap (a text_delta — one
//     attempt's text, from its one writer — at EVS#<seq>, outside lsi1,
//     its repeat skipped by the Store that appended it); seqs are strictly
//     increasing per submission. Two appenders racing on one submission may
//     make a later seq visible a moment before an earlier one. The counter
//     expires with the events it numbered (its ttl moves with each append).
//   - A claim-checked blob is written before the item that references it;
//     a losing write (first result wins, an existing node) leaves an
//     unreferenced blob, never a dangling reference.
//   - No transactions anywhere: each write is one conditional item write.
//
// Item collections (all items of one pk) are capped at 10 GB because of
// lsi1: a session's submissions, a submission's events or a run's nodes
// beyond that fail.
//
// # Usage
//
//	ddb := dynamodb.NewFromConfig(cfg)
//	if err := dynamo.CreateTable(ctx, ddb, table); err != nil { // idempotent; tests and LocalStack init
//		return err
//	}
//	if err := dynamo.EnableTTL(ctx, ddb, table); err != nil {
//		return err
//	}
//	store, err := dynamo.New(ddb, dynamo.Options{Table: table, Blobs: s3blob.New(s3c, bucket)})
//	if err != nil {
//		return err
//	}
//	sub, created, err := store.CreateSubmission(ctx, sub)
//	sub.Phase = contracts.PhaseModel
//	sub, err = store.UpdateSubmission(ctx, sub, sub.Version) // ErrConflict if someone moved first
package dynamo
