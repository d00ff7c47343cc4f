package docs_test

import (
	"strings"
	"testing"
)

// c. no production binary depends on the test kit
func TestProductionDoesNotLinkTestkit(t *testing.T) {
	t.Parallel()
	isRoot := func(r string) bool { return r == "cmd/cairn" || strings.HasPrefix(r, "functions/") }
	isTestkit := func(ip string) bool {
		r := rel(ip)
		return r == "shared/testkit" || strings.HasPrefix(r, "shared/testkit/")
	}
	forbidDeps(t, modulePackages(t), isRoot, isTestkit,
		"%s links the test kit: %s (through %s); production code must not depend on shared/testkit/...: move what it needs out of the test kit, or drop the import")
}

// d. no Lambda function binary links the embedded backend
func TestFunctionsDoNotLinkEmbedded(t *testing.T) {
	t.Parallel()
	// Resolved as `make functions` builds them: linux/arm64, no cgo, lambda.norpc.
	pkgs, err := goList(root(t), lambdaEnv, "-deps", "-tags", lambdaTags, "./functions/...")
	if err != nil {
		t.Fatal(err)
	}
	isRoot := func(r string) bool { return strings.HasPrefix(r, "functions/") }
	forbidden := func(ip string) bool {
		r := rel(ip)
		return r == "shared/embedded" || strings.HasPrefix(r, "shared/embedded/") ||
			ip == "modernc.org/sqlite" || strings.HasPrefix(ip, "modernc.org/sqlite/")
	}
	forbidDeps(t, pkgs, isRoot, forbidden,
		"%s (a function binary) links the embedded backend: %s (through %s); a function must not link shared/embedded/... or SQLite: keep shared/aws/... and whatever the function imports free of them")
}

// forbidDeps fails t for every root package (isRoot of its module-relative
// path) whose dependencies include a forbidden one, naming them and one
// import chain (msg gets the root, the forbidden packages and the chain).
func forbidDeps(t *testing.T, pkgs []pkg, isRoot func(string) bool, forbidden func(string) bool, msg string) {
	t.Helper()
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	roots := 0
	for _, p := range pkgs {
		r := rel(p.ImportPath)
		if !isRoot(r) {
			continue
		}
		roots++
		if bad := filter(p.Deps, forbidden); len(bad) > 0 {
			via := chain(byPath, p.ImportPath, forbidden)
			t.Errorf(msg, r, strings.Join(bad, ", "), strings.Join(via, " → "))
		}
	}
	if roots == 0 {
		t.Errorf("no root package (cmd/cairn, functions/*) found; the check has nothing to check")
	}
}

// e. each function links only what it serves (issue 16): a function that
// does not call a model links no model SDK, one that places no sandbox no
// ECS, one that evaluates no script and invokes no isolate neither the
// isolate invoker nor the Lambda SDK. The table is what each one serves.
func TestFunctionsLinkOnlyWhatTheyServe(t *testing.T) {
	t.Parallel()
	modelSDKs := []string{
		"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go",
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		module + "/shared/model/anthropic", module + "/shared/model/openai", module + "/shared/model/bedrock",
		module + "/shared/model/providers$", // exactly: its keys/ sub-package checks model strings without the SDKs
	}
	ecs := []string{
		"github.com/aws/aws-sdk-go-v2/service/ecs", "github.com/aws/aws-sdk-go-v2/service/ec2",
		module + "/shared/sandbox/fargate", module + "/shared/sandbox/remote",
	}
	invoker := []string{
		"github.com/aws/aws-sdk-go-v2/service/lambda", module + "/shared/workflow/isolate",
	}
	runtime := []string{ // the runtime, its stores and every AWS SDK: what isolate and sandboxd never link
		"github.com/aws/aws-sdk-go-v2/", module + "/shared/aws/", module + "/shared/assemble", module + "/shared/turn",
	}
	starlark := []string{"go.starlark.net", module + "/shared/workflow/script"}
	sandboxd := []string{module + "/shared/sandbox/server"}
	cat := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	mcpSDK := []string{"github.com/modelcontextprotocol/go-sdk"} // the api pins, the tools function calls
	// what the stream function never links: it reads the journal and the
	// event log (DynamoDB, S3) and assembles no runtime, so no queue,
	// scheduler, secrets or script interpreter either
	assembled := []string{
		module + "/shared/assemble", module + "/shared/aws/backend$", module + "/shared/aws/sqsqueue", module + "/shared/workflow",
		module + "/shared/repair", module + "/shared/worker", module + "/shared/tools", module + "/shared/sandbox",
		"github.com/aws/aws-sdk-go-v2/service/sqs", "github.com/aws/aws-sdk-go-v2/service/scheduler",
		"github.com/aws/aws-sdk-go-v2/service/secretsmanager",
	}
	console := []string{module + "/shared/console"} // the api function's alone (and cairn dev's)
	forbidden := map[string][]string{
		"functions/api":      cat(modelSDKs, ecs, invoker, sandboxd),
		"functions/model":    cat(ecs, invoker, sandboxd, mcpSDK, console),
		"functions/tools":    cat(modelSDKs, invoker, sandboxd, console),
		"functions/commit":   cat(modelSDKs, ecs, invoker, sandboxd, mcpSDK, console),
		"functions/repair":   cat(modelSDKs, ecs, invoker, sandboxd, mcpSDK, console),
		"functions/workflow": cat(modelSDKs, ecs, sandboxd, mcpSDK, console),
		"functions/isolate":  cat(modelSDKs, ecs, runtime, sandboxd, console, []string{"github.com/aws/aws-sdk-go-v2"}),
		"functions/sandboxd": cat(modelSDKs, runtime, starlark, console, []string{"github.com/aws/aws-sdk-go-v2"}),
		"functions/stream":   cat(modelSDKs, ecs, invoker, sandboxd, mcpSDK, starlark, assembled, console),
	}
	pkgs, err := goList(root(t), lambdaEnv, "-deps", "-tags", lambdaTags, "./functions/...")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		if strings.HasPrefix(rel(p.ImportPath), "functions/") && p.Name == "main" {
			seen[rel(p.ImportPath)] = true
		}
	}
	for fn := range seen {
		if _, ok := forbidden[fn]; !ok {
			t.Errorf("%s: a function without a row in this test's table: say what it must not link", fn)
		}
	}
	for fn, prefixes := range forbidden {
		if !seen[fn] {
			t.Errorf("%s: in the table but not a function any more", fn)
			continue
		}
		bad := func(ip string) bool {
			for _, p := range prefixes { // a path and what is below it; "path$" the path alone
				if exact, ok := strings.CutSuffix(p, "$"); ok {
					if ip == exact {
						return true
					}
				} else if ip == p || strings.HasPrefix(ip, strings.TrimSuffix(p, "/")+"/") {
					return true
				}
			}
			return false
		}
		forbidDeps(t, pkgs, func(r string) bool { return r == fn }, bad,
			"%s links what it does not serve: %s (through %s); build the heavy part in a sub-package of shared/aws/backend that only the function serving it names in backend.Serves")
	}
}
