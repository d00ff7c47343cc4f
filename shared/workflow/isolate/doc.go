// Package isolate runs workflow-script evaluations (shared/workflow/script)
// in a process with nothing to steal (docs/DESIGN.md §7): `cairn isolate`
// locally, functions/isolate on AWS. The driver never evaluates a script in
// its own process; it holds a contracts.Evaluator: a Runner here, or
// lambdainvoke.Evaluator on AWS.
//
// It may import shared/contracts, shared/workflow/script, the standard
// library and golang.org/x/sys. It does not import the Lambda API client
// (lambdainvoke does), so neither the isolate function nor `cairn isolate`
// links what it never uses.
//
// # The protocol
//
// One Request as JSON on the isolate's stdin — an EvalRequest's fields plus
// "limits": {"memory_mib", "cpu_seconds"} — and one EvalResponse as JSON on
// its stdout; exit status 0 whenever a response was written. A bare
// EvalRequest is a valid Request (default limits).
//
// # What the isolate process does to itself (Main)
//
//   - Before reading anything: RLIMIT_CORE 0, RLIMIT_FSIZE 16 MiB,
//     RLIMIT_NOFILE 16, GOMAXPROCS 1, eight spare OS threads, then
//     RLIMIT_NPROC 0: it cannot start a process (for root the kernel does
//     not enforce RLIMIT_NPROC; the tests check it as nobody). The Go runtime
//     survives on the spare threads: 80 evaluations with collections, 80 of
//     80 probe runs.
//   - After reading the request (at most MaxRequestBytes): RLIMIT_DATA =
//     the process's own writable memory (VmData) + MemoryMiB, Go's memory
//     limit at ¾ of MemoryMiB, a heap guard (live heap past ½, or held
//     memory past ⅞, cancels the evaluation with "memory limit exceeded"),
//     a 64 MiB goroutine stack limit, RLIMIT_CPU CPUSeconds soft /
//     CPUSeconds+1 hard: SIGXCPU at the soft limit cancels the evaluation
//     with "CPU time limit exceeded", SIGKILL at the hard one if a builtin
//     does not yield.
//
// Why RLIMIT_DATA and not RLIMIT_AS: the Go runtime and Starlark (4 GiB for
// its small-int table) reserve address space they never touch; a small
// script's isolate has a 5.4 GiB VmSize for 4.5 MiB resident, and a 1 GiB
// RLIMIT_AS kills it at start. VmData counts only writable private
// mappings: 72 MiB at start without cgo (a 32 MiB crypto table in .bss and
// runtime tables, untouched), about 170 MiB with cgo (8 MiB thread stacks),
// so the cap is set relative to it.
//
// A single allocation larger than the cap cannot be stopped politely: the
// Go runtime dies ("fatal error: runtime: out of memory", or a SIGSEGV in
// the collector), and the Runner reports "memory limit exceeded".
//
// # The Runner (contracts.Evaluator)
//
// Starts Command with an empty environment, "/" as its directory, the
// request as its only input, in its own process group (killed at the wall
// clock, when stdout passes MaxOutput, and after the isolate exits), with
// SIGKILL on the runner's death. Every misbehaviour is an EvalFailed
// response with a nil error; only "could not start" and the caller's ctx
// ending are errors.
//
// Measured on a 2-vCPU VM where a hello-world Go process alone costs about
// 16 ms: BenchmarkIsolateRoundTrip ≈ 16.5 ms per evaluation through the
// test isolate (≈ 37 ms while this package still linked the Lambda SDK,
// hence lambdainvoke), ≈ 45 µs for BenchmarkEvaluateInProcess on the same
// script. The full cairn binary spends about 63 ms initialising packages
// before `cairn isolate` runs (≈ 70 ms per evaluation).
//
// # The Lambda (LambdaHandler)
//
// The same evaluation per invocation. In a warm Lambda the process serves
// many invocations, so per-process caps on memory and CPU time do not fit:
// LambdaHandler lowers the other limits once (64 descriptors: the Runtime
// API connection), empties the environment with ClearEnv (the role's
// credentials included; the role allows nothing anyway), and per
// invocation applies the heap guard within Limits.MemoryMiB (the
// function's memory size) and stops the evaluation 500 ms before the
// invocation's deadline.
//
// # Usage
//
//	// cmd/cairn: the `cairn isolate` subcommand
//	os.Exit(isolate.Main(ctx, os.Stdin, os.Stdout, os.Stderr))
//
//	// the driver, locally
//	exe, _ := os.Executable()
//	var ev contracts.Evaluator = &isolate.Runner{Command: []string{exe, "isolate"}}
//	resp, err := ev.Evaluate(ctx, req) // err: retry later; resp.Status EvalFailed: the run fails
//
//	// functions/isolate
//	h := &isolate.LambdaHandler{Limits: isolate.Limits{MemoryMiB: mem}, ClearEnv: true}
//	lambda.Start(h.Handle)
package isolate
