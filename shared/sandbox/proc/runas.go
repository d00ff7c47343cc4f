package proc

import "github.com/cairnrun/cairn/shared/sandbox/local"

// searchable makes every directory above a workspace searchable by other
// users (o+x, never read: local.Searchable). Run as root, sandboxd runs
// commands as an unprivileged user (server.EnvRunAs, nobody by default),
// which enters its workspace after the switch of user; a data directory of
// mode 0700 would keep it out.
var searchable = local.Searchable
