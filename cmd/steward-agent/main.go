/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command steward-agent is the program Steward runs inside the pods it
// creates. Steward's image carries it beside the operator; a pod's init
// container copies it out (`steward copy-binary DEST`) into a volume, and
// the pod's other containers run the copy in the engine's image:
//
//	steward-agent instance          the entrypoint of a database pod (see package instance)
//	steward-agent copy-binary DEST  copies this executable to DEST
//	steward-agent backup            dumps a database into a bucket (see package dump)
//	steward-agent restore           restores a backup into a database
//	steward-agent backup-check      checks that a bucket can hold backups
//	steward-agent backup-delete     deletes a database's backups from a bucket
//	steward-agent backup-verify     restores a backup into a throwaway server and checks it
//	steward-agent wal-archive, wal-fetch, backup-base, restore-pitr, verify-pitr
//	                                point-in-time recovery (see package pitr)
//
// The operator's own binary links none of these commands nor the S3, GCS
// and Azure clients they use, which keeps its memory and its attack
// surface small.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitr"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/instance"
)

const usage = "usage: steward-agent instance | copy-binary DEST | backup | restore | backup-check | backup-delete | backup-verify | wal-archive | wal-fetch FILE PATH | backup-base | restore-pitr | verify-pitr"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch args[0] {
	case "instance":
		return instance.Main(ctx, os.Stderr)
	case dumpcmd.CommandBackup, dumpcmd.CommandRestore, dumpcmd.CommandCheck, dumpcmd.CommandDelete, dumpcmd.CommandVerify:
		return dump.Main(ctx, args[0], os.Getenv, os.Stderr)
	case pitrcmd.CommandArchive, pitrcmd.CommandFetch, pitrcmd.CommandBase, pitrcmd.CommandRestore, pitrcmd.CommandVerify:
		return pitr.Main(ctx, args[0], args[1:], os.Getenv, os.Stderr)
	case "copy-binary":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: steward-agent copy-binary DEST")
			return 2
		}
		if err := instance.CopyExecutable(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "steward-agent:", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "steward-agent: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
}
