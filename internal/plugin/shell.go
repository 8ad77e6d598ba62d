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

package plugin

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// The environment of a database container that the shell reads, as the
// Database controller sets it (internal/instance's Env* names; a test
// keeps them equal). Not imported: package instance runs the engines, and
// builds for Linux only, while the plugin runs on the user's machine.
const (
	envOwnerUsername     = "STEWARD_OWNER_USERNAME"
	envOwnerPassword     = "STEWARD_OWNER_PASSWORD"
	envSuperuserUsername = "STEWARD_SUPERUSER_USERNAME"
	envSuperuserPassword = "STEWARD_SUPERUSER_PASSWORD"
	envRunDir            = "STEWARD_RUN_DIR"
	envPort              = "STEWARD_PORT"
	envDatabase          = "STEWARD_DATABASE"
)

// A database shell runs the engine's own client in the database's
// container, through the API server's exec. The credentials never leave
// the cluster: the container's environment holds the owner's and the
// superuser's (the kubelet took them from the Secrets <db>-credentials and
// <db>-superuser at start, and the running server has those), and the shell
// passes them to the client in its environment (PGPASSWORD, MYSQL_PWD). No
// password is read by this command, sent in the exec request (whose URL the
// API server may log) or printed. The client connects over the server's
// local socket.

// shellScripts are the sh scripts that start each engine's client; "$@"
// are the user's arguments after "--". The user variables are filled in by
// shellCommandLine.
var shellScripts = map[v1alpha1.DatabaseEngine]string{
	v1alpha1.EnginePostgres: `PGPASSWORD="$%[1]s" exec psql -h "$%[3]s" -p "$%[4]s" -U "$%[2]s" -d "$%[5]s" "$@"`,
	// MariaDB 11 ships the client as mariadb only; MySQL as mysql only.
	v1alpha1.EngineMySQL: `client=$(command -v mariadb || command -v mysql) || { echo "no mysql or mariadb client in the container" >&2; exit 127; }
MYSQL_PWD="$%[1]s" exec "$client" --socket="$%[3]s/mysqld.sock" -u "$%[2]s" "$%[5]s" "$@"`,
}

func (c *cli) shellCommand(name string, engine v1alpha1.DatabaseEngine) *cobra.Command {
	var replica, superuser bool
	client := map[v1alpha1.DatabaseEngine]string{v1alpha1.EnginePostgres: "psql", v1alpha1.EngineMySQL: "mysql (or mariadb)"}[engine]
	cmd := &cobra.Command{
		Use:   name + " DATABASE [-- CLIENT-ARGS...]",
		Short: "Open " + client + " on a Database's primary, or a replica",
		Long: `Runs ` + client + ` in the database container of the Database's primary (or, with
--replica, of a ready replica) through the API server's exec, with a
terminal when stdin is one. It connects as the Database's owner to its
database (--superuser: as the superuser) over the server's local socket.

The password comes from the container's environment, which the kubelet
filled from the Database's credentials Secret; it is never read by this
command, sent in the request or printed. Arguments after -- go to the
client.`,
		Example: `  kubectl steward ` + name + ` orders
  kubectl steward ` + name + ` orders --replica
  kubectl steward ` + name + ` orders -- ` + map[v1alpha1.DatabaseEngine]string{
			v1alpha1.EnginePostgres: `-c 'select count(*) from orders'`,
			v1alpha1.EngineMySQL:    `-e 'select count(*) from orders'`}[engine],
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: c.completeNames(kindDatabase),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 1 || dash == -1 && len(args) > 1 {
				return fmt.Errorf("%s takes one Database; put the client's arguments after --", name)
			}
			if err := c.setUp(); err != nil {
				return err
			}
			ctx := commandContext(cmd)
			req, err := c.shellRequest(ctx, args[0], engine, replica, superuser, args[1:])
			if err != nil {
				return err
			}
			return c.exec(ctx, req)
		},
	}
	cmd.Flags().BoolVar(&replica, "replica", false, "Connect to a ready replica instead of the primary")
	cmd.Flags().BoolVar(&superuser, "superuser", false, "Connect as the superuser instead of the Database's owner")
	return cmd
}

// execRequest is a command to run in a container.
type execRequest struct {
	Namespace string
	Pod       string
	Container string
	Command   []string
	// Stdin: whether the user's stdin goes to the command.
	Stdin bool
}

// shellRequest is the exec of the engine's client in the instance pod the
// flags choose.
func (c *cli) shellRequest(ctx context.Context, name string, engine v1alpha1.DatabaseEngine, replica, superuser bool, clientArgs []string) (execRequest, error) {
	r, err := parseRef(name, kindDatabase)
	if err != nil {
		return execRequest{}, err
	}
	db := &v1alpha1.Database{}
	if err := c.get(ctx, kindDatabase, r.name, db); err != nil {
		return execRequest{}, err
	}
	family := db.Spec.Engine
	if family == v1alpha1.EngineMariaDB {
		family = v1alpha1.EngineMySQL
	}
	if family != engine {
		other := map[v1alpha1.DatabaseEngine]string{v1alpha1.EnginePostgres: "psql", v1alpha1.EngineMySQL: "mysql"}[family]
		return execRequest{}, fmt.Errorf("database %q runs %s: use kubectl steward %s", db.Name, db.Spec.Engine, other)
	}
	pod, err := instancePod(db, replica)
	if err != nil {
		return execRequest{}, err
	}
	if err := c.checkPodRunning(ctx, pod); err != nil {
		return execRequest{}, err
	}
	return execRequest{
		Namespace: db.Namespace,
		Pod:       pod,
		Container: databaseContainer(db.Spec.Engine),
		Command:   shellCommandLine(db.Spec.Engine, superuser, clientArgs),
		Stdin:     true,
	}, nil
}

// instancePod is the pod of the primary, or with replica of the first
// ready replica by name, from the instances' own reports.
func instancePod(db *v1alpha1.Database, replica bool) (string, error) {
	if !replica {
		return db.PrimaryPod(), nil
	}
	var ready []string
	for _, in := range db.Status.Instances {
		if in.Name != db.Status.Primary && in.Role == string(roleReplica) && in.Ready {
			ready = append(ready, in.Name)
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("database %q has no ready replica (kubectl steward status database/%s)", db.Name, db.Name)
	}
	slices.Sort(ready)
	return ready[0], nil
}

// roleReplica is the role a replica reports.
const roleReplica = "replica"

// databaseContainer is the name of the engine's container in an instance
// pod.
func databaseContainer(e v1alpha1.DatabaseEngine) string {
	return string(e)
}

// shellCommandLine is the command that runs the engine's client with the
// credentials of the container's environment.
func shellCommandLine(e v1alpha1.DatabaseEngine, superuser bool, clientArgs []string) []string {
	user, password := envOwnerUsername, envOwnerPassword
	if superuser {
		user, password = envSuperuserUsername, envSuperuserPassword
	}
	script := shellScripts[v1alpha1.EnginePostgres]
	argv0 := "psql"
	if e != v1alpha1.EnginePostgres {
		script, argv0 = shellScripts[v1alpha1.EngineMySQL], "mysql"
	}
	script = fmt.Sprintf(script, password, user, envRunDir, envPort, envDatabase)
	return append([]string{"sh", "-c", script, argv0}, clientArgs...)
}

// checkPodRunning fails readably when the pod does not exist or does not
// run.
func (c *cli) checkPodRunning(ctx context.Context, name string) error {
	pod := &corev1.Pod{}
	if err := c.c.Get(ctx, types.NamespacedName{Namespace: c.ns, Name: name}, pod); err != nil {
		return apiError(err, "get", core("pods"), "pod", c.ns, name)
	}
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %q is %s, not Running", name, orDash(string(pod.Status.Phase)))
	}
	return nil
}
