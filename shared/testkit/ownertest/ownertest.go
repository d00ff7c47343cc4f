package ownertest

import (
	"cmp"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// Caller is who makes a request.
type Caller int

const (
	A        Caller = iota // owns the records the routes are called on
	B                      // another principal
	Operator               // may read (and cancel) everything
	Nobody                 // no credentials at all
)

func (c Caller) String() string { return [...]string{"A", "B", "operator", "nobody"}[c] }

// Target is an API under test.
type Target struct {
	// H is the runtime behind the API: Run drains its queues to drive
	// turns and runs. It must serve workflows.
	H *enginetest.Harness
	// Name is the principal name of A, B and Operator (what the Owner of
	// a record they create says).
	Name func(Caller) string
	// Do makes one request as c and returns its status and body.
	Do func(t *testing.T, c Caller, method, path string, body []byte) (int, []byte)
}

// Bodies are the request bodies Run sends, by route; other POST routes
// get "{}". A body must pass the route's input checks, so that what a
// route answers B is its owner check, not its validation.
var Bodies = map[string]string{
	"POST /v1/sessions":                      `{"model":"scripted:plain"}`,
	"POST /v1/sessions/{id}/submissions":     `{"prompt":"hello"}`,
	"POST /v1/sessions/{id}/approvals/{aid}": `{"decision":"allow"}`,
	"POST /v1/workflows":                     `{"name":"w","script":"result = 1"}`,
	"POST /v1/workflows/{id}/schedules":      `{"expression":"rate(5 minutes)"}`,
	"POST /v1/workflows/{id}/runs":           `{}`,
}

// records are one principal's ids.
type records struct {
	session, submission, approval, workflow, run, node, schedule string
}

func (r records) ids() []string {
	var out []string
	for _, id := range []string{r.session, r.submission, r.approval, r.workflow, r.run, r.node, r.schedule} {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

// nodeScript starts one node, so a run that ended has a node.
const nodeScript = `result = agent("hi", model="scripted:plain").output`

// Run checks every route of api.Routes against tg.
func Run(t *testing.T, tg Target) {
	routes := api.Routes()
	if len(routes) < 10 {
		t.Fatalf("api.Routes lists %d routes", len(routes))
	}
	shared := setupA(t, tg)
	mine := setupB(t, tg)
	var reads, changes []string
	for _, rt := range routes {
		if strings.HasPrefix(rt, "GET ") {
			reads = append(reads, rt)
		} else {
			changes = append(changes, rt)
		}
	}
	// Reads first, on one set of A's records; then each change on a set
	// of its own.
	for _, rt := range reads {
		t.Run(rt, func(t *testing.T) { check(t, tg, rt, shared, mine) })
	}
	for _, rt := range changes {
		t.Run(rt, func(t *testing.T) {
			own := shared
			if placeholders.MatchString(rt) {
				own = setupA(t, tg)
			}
			check(t, tg, rt, own, mine)
		})
	}
}

var placeholders = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// fill replaces the placeholders of path with a's ids.
func fill(t *testing.T, path string, a records) string {
	t.Helper()
	return placeholders.ReplaceAllStringFunc(path, func(m string) string {
		switch name := placeholders.FindStringSubmatch(m)[1]; name {
		case "id":
			switch {
			case strings.HasPrefix(path, "/v1/sessions/"):
				return a.session
			case strings.HasPrefix(path, "/v1/workflows/"):
				return a.workflow
			}
		case "sid":
			return a.submission
		case "aid":
			return a.approval
		case "rid":
			return a.run
		case "nid":
			return a.node
		case "sch":
			return a.schedule
		}
		t.Fatalf("route path %s: ownertest does not know what %s stands for; teach it (shared/testkit/ownertest)", path, m)
		return ""
	})
}

func check(t *testing.T, tg Target, route string, a, b records) {
	switch route {
	case MCPRoute:
		checkMCP(t, tg, a)
		return
	case PrincipalRoute:
		checkPrincipal(t, tg)
		return
	}
	method, pattern, _ := strings.Cut(route, " ")
	path := fill(t, pattern, a)
	var body []byte
	if method == http.MethodPost {
		body = []byte(cmp.Or(Bodies[route], "{}"))
	}
	if st, raw := tg.Do(t, Nobody, method, path, body); st != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d %s, want 401", st, clip(raw))
	}
	if path != pattern { // on A's records
		st, raw := tg.Do(t, B, method, path, body)
		if st != http.StatusNotFound || errorCode(raw) != "not_found" {
			t.Fatalf("B on A's %s: %d %s, want 404 not_found", path, st, clip(raw))
		}
		// The operator reads everything; what it may change of A's is the
		// route's to say (a cancel yes, a submit no: 403 or 404).
		if st, raw := tg.Do(t, Operator, method, path, body); st == http.StatusUnauthorized || st >= 500 ||
			method == http.MethodGet && st != http.StatusOK {
			t.Fatalf("operator on A's %s: %d %s, want 200 for a read, no 401 or 5xx", path, st, clip(raw))
		}
		if st, raw := tg.Do(t, A, method, path, body); st == http.StatusNotFound || st == http.StatusUnauthorized || st >= 500 {
			t.Fatalf("A on its %s: %d %s, want an answer that is not 401, 404 or 5xx", path, st, clip(raw))
		}
		return
	}
	if method == http.MethodGet { // a list: each sees its own, the operator both
		for _, c := range []Caller{A, B, Operator} {
			st, raw := tg.Do(t, c, method, path, nil)
			if st != http.StatusOK {
				t.Fatalf("%s lists %s: %d %s", c, path, st, clip(raw))
			}
			hasA, hasB := containsAny(raw, a.ids()), containsAny(raw, b.ids())
			switch {
			case c == A && (!hasA || hasB), c == B && (!hasB || hasA), c == Operator && (!hasA || !hasB):
				t.Fatalf("%s lists %s: holds A's items %v, B's %v: %s", c, path, hasA, hasB, clip(raw))
			}
		}
		return
	}
	for _, c := range []Caller{A, B, Operator} { // a create: its caller owns it
		st, raw := tg.Do(t, c, method, path, body)
		var got struct {
			Owner *string `json:"owner"`
		}
		_ = json.Unmarshal(raw, &got)
		if st < 200 || st > 299 || got.Owner != nil && *got.Owner != tg.Name(c) {
			t.Fatalf("%s: %s %s: %d %s, want 2xx owned by %s", c, method, path, st, clip(raw), tg.Name(c))
		}
	}
}

// PrincipalRoute names the caller itself, no record: each caller must get
// its own name (and the operator flag only the operator).
const PrincipalRoute = "GET /v1/principal"

func checkPrincipal(t *testing.T, tg Target) {
	t.Helper()
	if st, raw := tg.Do(t, Nobody, http.MethodGet, "/v1/principal", nil); st != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d %s, want 401", st, clip(raw))
	}
	for _, c := range []Caller{A, B, Operator} {
		var got struct {
			Name     string `json:"name"`
			Operator bool   `json:"operator"`
		}
		get(t, tg, c, "/v1/principal", &got)
		if got.Name != tg.Name(c) || got.Operator != (c == Operator) {
			t.Fatalf("%s: GET /v1/principal = %+v, want name %q, operator %v", c, got, tg.Name(c), c == Operator)
		}
	}
}

// setupA makes A's records: a session with a turn waiting on an approval,
// a workflow with a run that ended (one node) and a schedule.
func setupA(t *testing.T, tg Target) records {
	t.Helper()
	var r records
	r.session = create(t, tg, A, "/v1/sessions", `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	r.submission = create(t, tg, A, "/v1/sessions/"+r.session+"/submissions", `{"prompt":"go"}`)
	tg.H.Drain()
	var ap struct {
		Approvals []struct {
			ID string `json:"id"`
		} `json:"approvals"`
	}
	get(t, tg, A, "/v1/sessions/"+r.session+"/approvals", &ap)
	if len(ap.Approvals) != 1 {
		t.Fatalf("A's turn waits on %d approvals, want 1", len(ap.Approvals))
	}
	r.approval = ap.Approvals[0].ID
	wf, _ := json.Marshal(map[string]string{"name": "a", "script": nodeScript})
	r.workflow = create(t, tg, A, "/v1/workflows", string(wf))
	r.run = create(t, tg, A, "/v1/workflows/"+r.workflow+"/runs", `{}`)
	tg.H.Drain()
	var run struct {
		Status string `json:"status"`
		Nodes  []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	get(t, tg, A, "/v1/workflows/"+r.workflow+"/runs/"+r.run, &run)
	if run.Status != "SUCCEEDED" || len(run.Nodes) != 1 {
		t.Fatalf("A's run: %s with %d nodes, want SUCCEEDED with 1", run.Status, len(run.Nodes))
	}
	r.node = run.Nodes[0].ID
	r.schedule = create(t, tg, A, "/v1/workflows/"+r.workflow+"/schedules", `{"expression":"rate(5 minutes)"}`)
	return r
}

// setupB makes B's own session, workflow and schedule (what B's lists
// hold).
func setupB(t *testing.T, tg Target) records {
	t.Helper()
	var r records
	r.session = create(t, tg, B, "/v1/sessions", `{"model":"scripted:plain"}`)
	r.workflow = create(t, tg, B, "/v1/workflows", `{"name":"b","script":"result = 1"}`)
	r.schedule = create(t, tg, B, "/v1/workflows/"+r.workflow+"/schedules", `{"expression":"rate(5 minutes)"}`)
	return r
}

// create POSTs body as c, expects 2xx with c as the owner, and returns the
// new record's id.
func create(t *testing.T, tg Target, c Caller, path, body string) string {
	t.Helper()
	st, raw := tg.Do(t, c, http.MethodPost, path, []byte(body))
	var got struct {
		ID    string `json:"id"`
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || st < 200 || st > 299 || got.ID == "" {
		t.Fatalf("%s: POST %s: %d %s", c, path, st, clip(raw))
	}
	if got.Owner != tg.Name(c) && !strings.Contains(path, "/submissions") {
		t.Fatalf("%s: POST %s made a record owned by %q, want %q", c, path, got.Owner, tg.Name(c))
	}
	return got.ID
}

func get(t *testing.T, tg Target, c Caller, path string, out any) {
	t.Helper()
	st, raw := tg.Do(t, c, http.MethodGet, path, nil)
	if st != http.StatusOK {
		t.Fatalf("%s: GET %s: %d %s", c, path, st, clip(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: GET %s: %v", c, path, err)
	}
}

func errorCode(raw []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Error.Code
}

func containsAny(raw []byte, ids []string) bool {
	for _, id := range ids {
		if strings.Contains(string(raw), `"`+id+`"`) {
			return true
		}
	}
	return false
}

func clip(raw []byte) string {
	if len(raw) > 400 {
		return string(raw[:400]) + "…"
	}
	return string(raw)
}
