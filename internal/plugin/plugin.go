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

// Package plugin is kubectl-steward, Steward's kubectl plugin: the status
// of Steward's objects with the reasons behind them, on-demand backups and
// restores, switchovers, a database shell, logs, the preview of an
// AppConfig change and an AppStack's dependency graph.
//
// It talks to the API server only, as the user of the kubeconfig (the
// usual --kubeconfig, --context, -n and --as flags), and asks the operator
// for work the way a user does: through the objects' specs and the
// annotations the operator documents.
package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// cli is what every subcommand shares: the kubeconfig flags, the streams,
// and the clients, built from the flags on first use.
type cli struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams

	// now is the clock that ages are measured against.
	now func() time.Time
	// poll is how often a wait looks again.
	poll time.Duration
	// exec runs a command in a container; streamExec unless a test
	// records it.
	exec execFunc
	// openLog opens a container's log; the API server's unless a test
	// feeds it.
	openLog logOpener

	// operator says where to look for the operator.
	operator operatorFlags

	once sync.Once
	err  error
	cfg  *rest.Config
	c    client.Client
	kube kubernetes.Interface
	ns   string
	// nsExplicit is true when the namespace came from -n.
	nsExplicit bool
}

// NewCommand is the kubectl-steward command with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	c := &cli{
		flags:   genericclioptions.NewConfigFlags(true),
		streams: streams,
		now:     time.Now,
		poll:    time.Second,
	}
	c.exec = c.streamExec
	c.openLog = c.apiLog
	return c.root()
}

func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-steward",
		Short: "Work with Steward's web apps, databases, caches, backups, app configs and app stacks",
		Long: `kubectl steward shows the state of Steward's objects with the reasons behind
it, and asks the operator for backups, restores and switchovers.

It talks to the API server only, as the user of your kubeconfig.`,
		SilenceUsage: true,
		// Errors are printed by cobra once, as "Error: ...".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl steward"},
	}
	root.SetIn(c.streams.In)
	root.SetOut(c.streams.Out)
	root.SetErr(c.streams.ErrOut)
	c.flags.AddFlags(root.PersistentFlags())
	c.operator.addFlags(root)
	root.AddCommand(
		c.statusCommand(),
		c.backupCommand(),
		c.restoreCommand(),
		c.switchoverCommand(),
		c.unsupportedDatabaseCommand("restart", "Restart a Database's instances"),
		c.unsupportedDatabaseCommand("reload", "Reload a Database's configuration"),
		c.shellCommand("psql", v1alpha1.EnginePostgres),
		c.shellCommand("mysql", v1alpha1.EngineMySQL),
		c.logsCommand(),
		c.configCommand(),
		c.stackCommand(),
		c.retryFinalBackupCommand(),
	)
	return root
}

// setUp builds the clients from the flags, once.
func (c *cli) setUp() error {
	c.once.Do(func() {
		c.err = c.buildClients()
	})
	return c.err
}

func (c *cli) buildClients() error {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if cfg.QPS == 0 {
		// kubectl's rate: client-go's default of 5 is for controllers.
		cfg.QPS, cfg.Burst = 50, 300
	}
	c.cfg = cfg
	c.ns, c.nsExplicit, err = c.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if c.flags.Namespace != nil && *c.flags.Namespace != "" {
		c.nsExplicit = true
	}
	c.c, err = client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	c.kube, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	return nil
}

// scheme knows the built-in kinds and Steward's.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registrations
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// context is the command's context, which Ctrl-C cancels.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
