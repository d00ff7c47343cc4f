// Package all is every part of the AWS backend in one process: what
// `cairn dev --backend aws` (the harness playing every function) and the
// backend's end-to-end tests build. No function links it.
//
//	cfg.Serves = all.Serves
//	rt, err := backend.New(ctx, cfg)
//
// It may import shared/aws/backend, shared/aws/backend/mcptools, shared/aws/backend/models,
// shared/aws/backend/sandboxes, shared/aws/backend/scripts, shared/console.
package all
