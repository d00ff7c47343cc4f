package client

import (
	"fmt"
	"net/url"
	"strings"
)

// routes is the route table: every route pattern of the API (as
// shared/api registers it; api.Routes() lists them) and the methods of
// Client that call it. Every request goes through call/open with one of
// these patterns, and routes_test.go fails when a route of the API has no
// method here, when a pattern here is not the API's, or when a method
// sends anything but its pattern's method and path.
var routes = map[string][]string{
	"POST /v1/sessions":                               {"CreateSession"},
	"GET /v1/sessions":                                {"Sessions"},
	"GET /v1/sessions/{id}":                           {"Session"},
	"GET /v1/sessions/{id}/transcript":                {"Transcript"},
	"POST /v1/sessions/{id}/submissions":              {"Submit"},
	"GET /v1/sessions/{id}/submissions":               {"Submissions"},
	"GET /v1/sessions/{id}/submissions/{sid}":         {"Submission"},
	"GET /v1/sessions/{id}/submissions/{sid}/events":  {"Events", "Follow"},
	"GET /v1/sessions/{id}/events":                    {"SessionTurns", "FollowSession"},
	"GET /v1/sessions/{id}/approvals":                 {"Approvals"},
	"POST /v1/sessions/{id}/approvals/{aid}":          {"Decide"},
	"GET /v1/usage":                                   {"Usage"},
	"GET /v1/principal":                               {"Principal"},
	"POST /v1/workflows":                              {"CreateWorkflow"},
	"GET /v1/workflows":                               {"Workflows"},
	"GET /v1/workflows/{id}":                          {"Workflow"},
	"POST /v1/workflows/{id}/runs":                    {"StartRun"},
	"GET /v1/workflows/{id}/runs":                     {"Runs"},
	"GET /v1/workflows/{id}/runs/{rid}":               {"Run"},
	"GET /v1/workflows/{id}/runs/{rid}/nodes":         {"Nodes"},
	"GET /v1/workflows/{id}/runs/{rid}/nodes/{nid}":   {"Node"},
	"POST /v1/workflows/{id}/schedules":               {"CreateSchedule"},
	"GET /v1/workflows/{id}/schedules":                {"WorkflowSchedules"},
	"GET /v1/schedules":                               {"Schedules"},
	"GET /v1/workflows/{id}/schedules/{sch}":          {"Schedule"},
	"POST /v1/workflows/{id}/schedules/{sch}/pause":   {"PauseSchedule"},
	"POST /v1/workflows/{id}/schedules/{sch}/resume":  {"ResumeSchedule"},
	"DELETE /v1/workflows/{id}/schedules/{sch}":       {"DeleteSchedule"},
	"POST /v1/sessions/{id}/submissions/{sid}/cancel": {"Cancel"},
	"POST /v1/sessions/{id}/submissions/{sid}/retry":  {"Retry"},
	"POST /v1/workflows/{id}/runs/{rid}/cancel":       {"CancelRun"},
	"POST /v1/mcp":                                    {"MCP"},
}

// expand returns the method and path of route pattern with its
// wildcards ({id}, …) replaced, in order, by args, each path-escaped.
func expand(pattern string, args []string) (method, path string, err error) {
	if _, ok := routes[pattern]; !ok {
		return "", "", fmt.Errorf("client: %q is not a route of the API", pattern)
	}
	method, tmpl, _ := strings.Cut(pattern, " ")
	segs := strings.Split(tmpl, "/")
	n := 0
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			continue
		}
		name := strings.Trim(s, "{}")
		if n >= len(args) {
			return "", "", fmt.Errorf("client: %s: no value for {%s}", pattern, name)
		}
		if args[n] == "" {
			return "", "", fmt.Errorf("client: %s: {%s} is empty", pattern, name)
		}
		segs[i] = segment(args[n])
		n++
	}
	if n != len(args) {
		return "", "", fmt.Errorf("client: %s takes %d path values, got %d", pattern, n, len(args))
	}
	return method, strings.Join(segs, "/"), nil
}

// segment is v escaped as one path segment: url.PathEscape, and "." and
// ".." escaped too (PathEscape leaves them; a server's mux would clean
// them away and the path would name another route).
func segment(v string) string {
	switch v {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(v)
}
