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

package realnode

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/build/images"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// upgradeEngine is what the minor upgrade test needs of an engine.
type upgradeEngine struct {
	// name is the Database's.
	name              string
	engine, container string
	// image is the short name of the engine's image, previous that of the
	// image of Debian's last point release.
	image, previous string
	client          clientImage
	super           func(context.Context, string, string) (string, error)
	// versionSQL returns the server's version, starting with the
	// upstream one: "15.18 (Debian ...)", "10.11.18-MariaDB-...".
	versionSQL string
	// streaming counts, on the primary, the replicas that follow it.
	streaming string
}

var (
	postgresUpgrade = upgradeEngine{
		name: "pgup", engine: "postgres", container: "postgres", image: "postgres", previous: "postgres-previous",
		client: postgresClient, super: postgresSuper, versionSQL: "show server_version",
		streaming: "select count(*) from pg_stat_replication where state = 'streaming'",
	}
	mariadbUpgrade = upgradeEngine{
		name: "mariaup", engine: "mariadb", container: "mariadb", image: "mariadb", previous: "mariadb-previous",
		client: mariadbClient, super: mariadbSuper, versionSQL: "select version()",
		streaming: "select count(*) from information_schema.processlist where command like 'Binlog Dump%'",
	}
)

// TestMinorUpgrade changes the version of a PostgreSQL and of a MariaDB
// Database of two instances from the server of Debian 12's last point
// release to that of its security updates (15.18 to 15.20, 10.11.18 to
// 10.11.19 when written): each instance then runs the new server, the
// replica was replaced first and the primary switched over to it before
// its own pod was, one pod down at a time; every write a client saw
// succeed during the upgrade is there, a row written before it too, and
// the replica follows the new primary.
func TestMinorUpgrade(t *testing.T) {
	requireClusterBeside(t)
	for _, e := range []upgradeEngine{postgresUpgrade, mariadbUpgrade} {
		t.Run(e.engine, func(t *testing.T) {
			t.Parallel()
			testMinorUpgrade(t, e)
		})
	}
}

func testMinorUpgrade(t *testing.T, e upgradeEngine) {
	from, to := versionOf(t, e.previous), versionOf(t, e.image)
	if from == to {
		// Debian's last point release has caught up with its security
		// updates: the upgrade still replaces every pod with another
		// image, of the same server.
		t.Logf("Debian's last point release and its security updates have the same %s %s: the upgrade changes the image, not the server", e.engine, from)
	}
	archives, err := imageArchives(e.previous)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cluster.Nodes() {
		if err := n.ImportImage(t.Context(), archives[0]); err != nil {
			t.Fatal(err)
		}
	}

	name := e.name
	pods := []string{name + "-0", name + "-1"}
	applyDatabase(t, name, e.engine, from, 2, "")
	checkServers(t, e, pods, from)
	app := startClient(t, name+"-app", e.client, name+"-credentials")
	checkReadBack(t, app, name, 1)

	writer := startWriter(t, app)
	watcher := watchPods(t, name)
	began := time.Now()
	kubectl(t, "patch", "database", name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"version":%q}}`, to))
	eventually(t, 10*time.Minute, "status.version "+to, func() error {
		if got := jsonpath(t, "database/"+name, "{.status.version}"); got != to {
			return fmt.Errorf("status.version %q", got)
		}
		return nil
	})
	kubectl(t, "wait", "--for=condition=Ready", "database/"+name, "--timeout=300s")
	took := time.Since(began)
	time.Sleep(2 * time.Second)
	order, worstDown, primaryRestart := watcher.stop(t)
	gap, writes, failed := writer.stop(t)
	primary := jsonpath(t, "database/"+name, "{.status.primary}")
	t.Logf("%s %s to %s: %v; pods replaced in order %v, %s-0 after a switchover to %s; %s-0 down %v; "+
		"a client writing through the read-write endpoint every 100 ms: %d writes, %d failed, longest gap between two successful writes %v",
		e.engine, from, to, took.Round(time.Millisecond), order, name, primary, name, primaryRestart.Round(time.Millisecond),
		writes, failed, gap.Round(time.Millisecond))

	checkServers(t, e, pods, to)
	// The image the pod asks for: the node reports an image by its first
	// name, and the everyday image's is its major (postgres:15).
	for _, pod := range pods {
		want := e.engine + ":" + to
		if got := jsonpath(t, "pod/"+pod, fmt.Sprintf(`{.spec.containers[?(@.name==%q)].image}`, e.container)); got != want && got != "docker.io/library/"+want {
			t.Errorf("%s asks for the image %s, want %s", pod, got, want)
		}
	}
	if strings.Join(order, ",") != name+"-1,"+name+"-0" {
		t.Errorf("pods replaced in order %v, want the replica first: %s-1, %s-0", order, name, name)
	}
	if worstDown > 1 {
		t.Errorf("%d instances were down at once, want one at a time", worstDown)
	}
	if primary != name+"-1" {
		t.Errorf("the primary is %s: want a switchover to the upgraded replica %s-1 before %s-0 was replaced", primary, name, name)
	}
	if primaryRestart == 0 || gap > primaryRestart+10*time.Second {
		t.Errorf("the read-write endpoint was gone %v, %s-0's replacement took %v", gap, name, primaryRestart)
	}

	// Every write the client saw succeed is there, through the read-write
	// endpoint, and the row written before the upgrade.
	acked := writes - failed
	if rows := countRows(t, app, "beats"); rows < acked {
		t.Errorf("%d rows in beats, but the client saw %d writes succeed: writes were lost", rows, acked)
	}
	if rows := countRows(t, app, "notes"); rows != 1 {
		t.Errorf("%d rows in notes, want the 1 written before the upgrade", rows)
	}
	eventually(t, 2*time.Minute, name+"-0 following the new primary", func() error {
		got, err := e.super(t.Context(), primary, e.streaming)
		if err != nil || got != "1" {
			return fmt.Errorf("%q replicas follow %s (%w)", got, primary, err)
		}
		return nil
	})
	checkReadBack(t, app, name, 0)
}

// checkServers fails the test unless every instance's server reports
// version.
func checkServers(t *testing.T, e upgradeEngine, pods []string, version string) {
	t.Helper()
	for _, pod := range pods {
		got := mustSQL(t, e.super, pod, e.versionSQL)
		if !strings.HasPrefix(got, version+" ") && !strings.HasPrefix(got, version+"-") {
			t.Errorf("%s: the server reports version %q, want %s", pod, got, version)
		}
	}
}

// versionOf is the full version of a server image `make images` built:
// 15.20 of docker.io/library/postgres:15 and :15.20.
func versionOf(t *testing.T, short string) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := images.Version(filepath.Join(root, "bin", "images"), short)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// countRows counts a table's rows through the read-write endpoint, with the
// credentials Secret's connection details.
func countRows(t *testing.T, c *client, table string) int {
	t.Helper()
	out := c.must(t, `case "$uri" in
postgres*) psql "$uri" -qAt -v ON_ERROR_STOP=1 -c "select count(*) from $1" ;;
*) MYSQL_PWD="$password" mariadb -h "$host" -P "$port" -u "$username" -N -B "$database" -e "select count(*) from $1" ;;
esac`, table)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("counting the rows of %s: %q", table, out)
	}
	return n
}
