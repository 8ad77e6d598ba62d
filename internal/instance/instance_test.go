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

package instance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/testenv/realserver"
)

// childEnv makes the test binary act as `steward instance`: the tests run
// the instance manager as a separate process, as in a pod, so that signals,
// exit codes and everything it and the server write can be checked.
const childEnv = "STEWARD_INSTANCE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := Main(ctx, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

var pg15 = realserver.Binaries{
	Package: "postgresql-15",
	Dirs:    []string{"/usr/lib/postgresql/15/bin"},
	Names:   []string{"initdb", "postgres", "pg_basebackup", "pg_rewind", "pg_controldata"},
}

func TestOrdinalAndFromEnv(t *testing.T) {
	for name, want := range map[string]int{"db-0": 0, "my-db-12": 12} {
		if got, err := Ordinal(name); err != nil || got != want {
			t.Errorf("Ordinal(%q) = %d, %v, want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"db", "db-", "db-x", ""} {
		if _, err := Ordinal(name); err == nil {
			t.Errorf("Ordinal(%q) succeeded", name)
		}
	}
	env := map[string]string{
		EnvEngine: "postgres", EnvDataDir: "/d", EnvConfigDir: "/c", EnvRunDir: "/r", EnvPort: "5433",
		EnvPodName: "db-2", EnvDatabase: "app",
		EnvSuperuserUsername: "postgres", EnvSuperuserPassword: "s3cret-su",
		EnvOwnerUsername: "app", EnvOwnerPassword: "s3cret-owner",
		EnvReplicationUsername: "repl", EnvReplicationPassword: "s3cret-repl",
		EnvRunAsUID: "999", EnvRunAsGID: "998",
	}
	o, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c := o.Config
	if c.ServerID != 3 || c.Name != "db-2" || c.PrimaryPort != 5433 || c.Port != 5433 ||
		c.RunAsUID != 999 || c.RunAsGID != 998 || o.StatusAddr != DefaultStatusAddr || o.Engine.Name() != "postgres" ||
		c.Owner.Password != "s3cret-owner" {
		t.Errorf("FromEnv = %+v", o)
	}
	delete(env, EnvOwnerPassword)
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvOwnerPassword) {
		t.Errorf("FromEnv without %s: %v", EnvOwnerPassword, err)
	}
}

func TestConfigHashFollowsConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	write := func(sub, content string) {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, "postgresql.conf"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(sub, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("..v1", "work_mem = '1MB'\n")
	if err := os.Symlink("..data/postgresql.conf", filepath.Join(dir, "postgresql.conf")); err != nil {
		t.Fatal(err)
	}
	h1, err := configHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := configHash(dir); h != h1 {
		t.Error("the hash of unchanged files changed")
	}
	// The operator computes it from the ConfigMap's data.
	if h := ConfigHash(map[string]string{"postgresql.conf": "work_mem = '1MB'\n"}); h != h1 {
		t.Errorf("ConfigHash of the same files = %s, the directory's %s", h, h1)
	}
	write("..v2", "work_mem = '2MB'\n")
	if h2, err := configHash(dir); err != nil || h2 == h1 {
		t.Errorf("the hash did not change with the content: %v", err)
	}
}

// syncBuffer collects a child's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func secret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw" + hex.EncodeToString(b)
}

// child is a running `steward instance` process.
type child struct {
	cmd       *exec.Cmd
	out       *syncBuffer
	env       map[string]string
	status    string
	done      chan struct{}
	exitCode  int
	configDir string
	dataDir   string
}

func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &child{cmd: cmd, out: &syncBuffer{}, env: env, status: "http://" + env[EnvStatusAddr], done: make(chan struct{}),
		configDir: env[EnvConfigDir], dataDir: env[EnvDataDir]}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		c.exitCode = cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", env[EnvPodName], c.out.String())
		}
	})
	return c
}

// waitListening waits until the child's status endpoint answers.
func waitListening(t *testing.T, c *child) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := c.get(t, "/healthz")
		if code != 0 {
			return
		}
		select {
		case <-c.done:
			t.Fatalf("%s exited before it listened: %s", c.env[EnvPodName], c.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen after a minute: %s", c.env[EnvPodName], body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *child) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(c.status + path)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// assign posts an assignment with the token of the child's replication
// password and returns the response's status code and body.
func (c *child) assign(t *testing.T, a Assignment, token string) (int, string) {
	t.Helper()
	body, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.status+"/role", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mustAssign posts an assignment that must be accepted.
func (c *child) mustAssign(t *testing.T, a Assignment) {
	t.Helper()
	if code, body := c.assign(t, a, ControlToken(c.env[EnvReplicationPassword])); code != http.StatusAccepted {
		t.Fatalf("%s: POST /role %+v: %d %s", c.env[EnvPodName], a, code, body)
	}
}

// report reads /status.
func (c *child) report(t *testing.T) Report {
	t.Helper()
	var r Report
	code, body := c.get(t, "/status")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("%s: /status: %d %s", c.env[EnvPodName], code, body)
	}
	return r
}

// waitReport waits until /status satisfies ok.
func (c *child) waitReport(t *testing.T, timeout time.Duration, what string, ok func(Report) bool) Report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := c.report(t)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after %v: %+v", c.env[EnvPodName], what, timeout, r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *child) waitReady(t *testing.T, timeout time.Duration) engine.Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-c.done:
			t.Fatalf("%s exited with %d before it was ready", c.env[EnvPodName], c.exitCode)
		default:
		}
		code, body := c.get(t, "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v: /readyz %d %s", c.env[EnvPodName], timeout, code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	code, body := c.get(t, "/status")
	var st engine.Status
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
		t.Fatalf("/status: %d %s %v", code, body, err)
	}
	return st
}

func (c *child) waitLog(t *testing.T, timeout time.Duration, text string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(c.out.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v", c.env[EnvPodName], text, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *child) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.exitCode
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", c.env[EnvPodName], timeout)
		return -1
	}
}

// TestInstance runs two instances as `steward instance` processes against
// the real PostgreSQL, driven by assignments as the operator drives them:
// nothing starts before the first; the replica's first clone fails until
// the primary answers; both become ready and report their roles; a
// configuration change is reloaded; then roles change hands (see
// changeRoles); SIGTERM stops an instance cleanly with exit code 0; no
// password occurs in anything they write.
func TestInstance(t *testing.T) {
	bin := realserver.Require(t, pg15)
	uid, gid := realserver.Unprivileged(t, "postgres")
	creds := map[string]string{
		EnvSuperuserUsername: "postgres", EnvSuperuserPassword: secret(t),
		EnvOwnerUsername: "app", EnvOwnerPassword: secret(t),
		EnvReplicationUsername: "replicator", EnvReplicationPassword: secret(t),
	}
	newEnv := func(pod string, port int) map[string]string {
		dir := realserver.TempDir(t, uid, gid)
		env := map[string]string{
			EnvEngine:             "postgres",
			EnvDataDir:            filepath.Join(realserver.Subdir(t, dir, "volume", 0o755, uid, gid), "pgdata"),
			EnvConfigDir:          realserver.Subdir(t, dir, "config", 0o755, 0, 0),
			EnvRunDir:             realserver.Subdir(t, dir, "run", 0o700, uid, gid),
			EnvBinDir:             bin,
			EnvPort:               strconv.Itoa(port),
			EnvStatusAddr:         fmt.Sprintf("127.0.0.1:%d", realserver.FreePort(t)),
			EnvPodName:            pod,
			EnvDatabase:           "app",
			EnvRunAsUID:           strconv.Itoa(int(uid)),
			EnvRunAsGID:           strconv.Itoa(int(gid)),
			EnvConfigPollInterval: "200ms",
		}
		for k, v := range creds {
			env[k] = v
		}
		_ = renderConfig(t, env[EnvConfigDir], port, nil)
		return env
	}
	ports := []int{realserver.FreePort(t), realserver.FreePort(t)}
	primary := startChild(t, newEnv("db-0", ports[0]))
	replica := startChild(t, newEnv("db-1", ports[1]))
	first := Assignment{Term: 1, Primary: "db-0", PrimaryHost: "127.0.0.1", PrimaryPort: ports[0], Bootstrap: true}

	// Nothing runs before the operator's word, and only its token counts.
	// The children listen once started, which a loaded machine delays.
	for _, c := range []*child{primary, replica} {
		waitListening(t, c)
	}
	if r := replica.report(t); r.Phase != PhaseAwaitingRole || r.Ready {
		t.Errorf("an instance without an assignment reports %+v, want %s", r, PhaseAwaitingRole)
	}
	if code, _ := replica.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of an instance waiting for its role: %d, want 200", code)
	}
	if code, _ := replica.assign(t, first, ControlToken("not the password")); code != http.StatusUnauthorized {
		t.Errorf("POST /role with a wrong token: %d, want 401", code)
	}
	replica.mustAssign(t, first)
	time.Sleep(500 * time.Millisecond) // the replica's first clone fails
	if code, body := replica.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a replica waiting for its primary: %d %s, want 503", code, body)
	}
	primary.mustAssign(t, first)

	st := primary.waitReady(t, 60*time.Second)
	if st.Role != engine.RolePrimary || !st.Ready {
		t.Errorf("primary /status = %+v", st)
	}
	st = replica.waitReady(t, 60*time.Second)
	if st.Role != engine.RoleReplica || !st.Ready || st.LagBytes == nil {
		t.Errorf("replica /status = %+v", st)
	}
	if !strings.Contains(replica.out.String(), "cloning the primary failed, retrying") {
		t.Error("the replica did not retry its clone")
	}

	// The owner can log in over TCP; a configuration change is reloaded.
	ctx := context.Background()
	owner := ownerConn(t, ports[0], creds[EnvOwnerPassword])
	before := primary.report(t).Config
	loaded := renderConfig(t, primary.configDir, ports[0], map[string]string{"work_mem": "5MB"})
	primary.waitLog(t, 10*time.Second, `"msg":"configuration reloaded"`)
	// The report names the configuration the server loaded, which the
	// operator compares with its ConfigMap's.
	if got := primary.report(t).Config; got != loaded || before == "" || before == loaded {
		t.Errorf("reported configuration %.12s after the reload (before %.12s), want %.12s", got, before, loaded)
	}
	var workMem string
	if err := owner.QueryRow(ctx, "SHOW work_mem").Scan(&workMem); err != nil || workMem != "5MB" {
		t.Errorf("work_mem = %q, %v after the reload, want 5MB", workMem, err)
	}
	_ = renderConfig(t, primary.configDir, ports[0], map[string]string{"work_mem": "5MB", "shared_buffers": "64MB"})
	primary.waitLog(t, 10*time.Second, `"pendingRestart":["shared_buffers"]`)
	if _, err := owner.Exec(ctx, "CREATE TABLE notes (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	changeRoles(t, [2]*child{primary, replica}, ports, creds[EnvOwnerPassword])

	// SIGTERM stops an instance cleanly.
	for _, c := range []*child{primary, replica} {
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := c.wait(t, 60*time.Second); code != 0 {
			t.Errorf("%s exited with %d after SIGTERM, want 0", c.env[EnvPodName], code)
		}
		if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); !os.IsNotExist(err) {
			t.Errorf("%s: postmaster.pid still exists after the stop: %v", c.env[EnvPodName], err)
		}
	}
	for _, c := range []*child{primary, replica} {
		out := c.out.String()
		for k, v := range creds {
			if strings.HasSuffix(k, "_PASSWORD") && strings.Contains(out, v) {
				t.Errorf("%s's output contains %s", c.env[EnvPodName], k)
			}
		}
	}
}

// changeRoles hands the primary's role over and back as the operator does:
// a switchover (the primary stops, the replica promoted once it has all of
// the primary's history, the old primary rejoins), an older term refused,
// a failover after the new primary's server is killed (the crashed one is
// wound back with pg_rewind and follows), and a primary fencing itself when
// its lease runs out while a replica does not stream from it. Every row
// written before a role change is there after it.
func changeRoles(t *testing.T, c [2]*child, ports []int, ownerPassword string) {
	ctx := context.Background()
	insert := func(port, id int) {
		t.Helper()
		if _, err := ownerConn(t, port, ownerPassword).Exec(ctx, "INSERT INTO notes VALUES ($1)", id); err != nil {
			t.Fatalf("writing row %d through port %d: %v", id, port, err)
		}
	}
	count := func(port int) int {
		t.Helper()
		var n int
		if err := ownerConn(t, port, ownerPassword).QueryRow(ctx, "SELECT count(*) FROM notes").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert(ports[0], 1)

	// Switchover to db-1.
	second := Assignment{Term: 2, Primary: "db-1", PrimaryHost: "127.0.0.1", PrimaryPort: ports[1]}
	c[0].mustAssign(t, second)
	stopped := c[0].waitReport(t, 60*time.Second, "stopped with its final position", func(r Report) bool {
		return r.Phase == PhaseStopped && r.StoppedPosition > 0
	})
	c[1].waitReport(t, 30*time.Second, "caught up with the stopped primary", func(r Report) bool {
		return r.Position >= stopped.StoppedPosition
	})
	c[1].mustAssign(t, second)
	promoted := c[1].waitReport(t, 60*time.Second, "promoted", func(r Report) bool { return r.Role == engine.RolePrimary && r.Ready })
	if promoted.Timeline != 2 {
		t.Errorf("the promoted instance is on timeline %d, want 2", promoted.Timeline)
	}
	c[0].mustAssign(t, second)
	c[0].waitReport(t, 90*time.Second, "a streaming replica of db-1", func(r Report) bool { return r.Role == engine.RoleReplica && r.Ready })
	c[1].waitReport(t, 30*time.Second, "streamed to by db-0", func(r Report) bool { return slices.Contains(r.Streaming, "db-0") })
	insert(ports[1], 2)
	if code, body := c[0].assign(t, Assignment{Term: 1, Primary: "db-0", PrimaryHost: "x"}, ControlToken(c[0].env[EnvReplicationPassword])); code != http.StatusConflict {
		t.Errorf("an assignment of an older term: %d %s, want 409", code, body)
	}

	// Dirty buffers, on db-1 and on db-0 replaying them: a checkpoint
	// requested by a promotion is spread and takes a while, as it does
	// under a steady load.
	if _, err := ownerConn(t, ports[1], ownerPassword).Exec(ctx,
		"CREATE TABLE bulk AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 100000) g"); err != nil {
		t.Fatal(err)
	}

	// Failover back to db-0 after db-1's server is killed. A renewal of
	// the term sent before the operator read the exit starts nothing: the
	// primary waits for the operator's choice. Told to restart in place,
	// knowing of the exit, it does.
	killServer(t, c[1])
	exited := c[1].waitReport(t, 30*time.Second, "stopped", func(r Report) bool { return r.Phase == PhaseStopped })
	if exited.Exits != 1 {
		t.Errorf("a primary whose server was killed reports %d exits, want 1", exited.Exits)
	}
	c[1].mustAssign(t, second)
	time.Sleep(2 * time.Second)
	if r := c[1].report(t); r.Phase != PhaseStopped {
		t.Errorf("a renewal sent before the exit was seen restarted the primary: %+v", r)
	}
	restart := second
	restart.PrimaryExits = exited.Exits
	c[1].mustAssign(t, restart)
	c[1].waitReport(t, 60*time.Second, "restarted in place", func(r Report) bool { return r.Role == engine.RolePrimary && r.Ready })
	killServer(t, c[1])
	c[1].waitReport(t, 30*time.Second, "stopped again", func(r Report) bool { return r.Phase == PhaseStopped && r.Exits == 2 })
	third := Assignment{Term: 3, Primary: "db-0", PrimaryHost: "127.0.0.1", PrimaryPort: ports[0], Replicas: []string{"db-1"}, LeaseSeconds: 3600}
	c[0].mustAssign(t, third)
	c[0].waitReport(t, 60*time.Second, "promoted", func(r Report) bool { return r.Role == engine.RolePrimary && r.Ready })
	c[1].mustAssign(t, third)
	c[1].waitReport(t, 90*time.Second, "a streaming replica of db-0 again", func(r Report) bool { return r.Role == engine.RoleReplica && r.Ready })
	c[1].waitLog(t, time.Second, "rejoined as a replica")
	insert(ports[0], 3)
	if n := count(ports[0]); n != 3 {
		t.Errorf("%d rows after two role changes, want 3", n)
	}

	// A switchover to db-1 right after the failover: db-1 is promoted
	// with a control file that still names an older timeline (no
	// checkpoint since its own rewind), and db-0 winds back to it.
	fourth := Assignment{Term: 4, Primary: "db-1", PrimaryHost: "127.0.0.1", PrimaryPort: ports[1]}
	c[0].mustAssign(t, fourth)
	stopped = c[0].waitReport(t, 60*time.Second, "stopped with its final position", func(r Report) bool {
		return r.Phase == PhaseStopped && r.StoppedPosition > 0
	})
	c[1].waitReport(t, 30*time.Second, "caught up with the stopped primary", func(r Report) bool {
		return r.Position >= stopped.StoppedPosition
	})
	c[1].mustAssign(t, fourth)
	c[1].waitReport(t, 60*time.Second, "promoted", func(r Report) bool { return r.Role == engine.RolePrimary && r.Ready })
	c[0].mustAssign(t, fourth)
	c[0].waitReport(t, 90*time.Second, "a streaming replica of db-1 again", func(r Report) bool { return r.Role == engine.RoleReplica && r.Ready })
	insert(ports[1], 4)
	if n := count(ports[1]); n != 4 {
		t.Errorf("%d rows after three role changes, want 4", n)
	}

	// A lease that runs out while a replica does not stream: fenced.
	fourth.LeaseSeconds, fourth.Replicas = 1, []string{"db-0", "db-9"}
	c[1].mustAssign(t, fourth)
	c[1].waitReport(t, 30*time.Second, "fenced", func(r Report) bool { return r.Phase == PhaseFenced && !r.Ready })
	c[1].waitLog(t, time.Second, "fencing")
}

// killServer sends SIGKILL to an instance's postgres.
func killServer(t *testing.T, c *child) {
	t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// ownerConn connects as the owner over TCP to the server on port.
func ownerConn(t *testing.T, port int, password string) *pgx.Conn {
	t.Helper()
	cc, err := pgx.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cc.Host, cc.Port, cc.User, cc.Password, cc.Database = "127.0.0.1", uint16(port), "app", password, "app"
	cc.TLSConfig, cc.Fallbacks = nil, nil
	c, err := pgx.ConnectConfig(context.Background(), cc)
	if err != nil {
		t.Fatalf("connecting to port %d: %v", port, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// renderConfig writes the postgres engine's configuration into dir through
// a ConfigMap-like symlink swap, and returns its ConfigHash.
func renderConfig(t *testing.T, dir string, port int, params map[string]string) string {
	t.Helper()
	e, err := engine.Get("postgres")
	if err != nil {
		t.Fatal(err)
	}
	files, err := e.Render(engine.Tuning{Version: "15", MemoryBytes: 512 << 20, Port: port, Parameters: params})
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.MkdirTemp(dir, "..v")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(version, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(version, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return ConfigHash(files)
}

// TestTerminationMessage: the failure is written to the termination
// message file the kubelet created, whole and plain; where there is none
// (outside a container), none is created.
func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(path, []byte("left over from an earlier run, longer than the message"), 0o666); err != nil {
		t.Fatal(err)
	}
	const msg = `starting the server: postgres exited: exit status 1: FATAL: could not access file "steward_no_such_library": No such file or directory`
	writeTerminationMessage(path, msg)
	if got, err := os.ReadFile(path); err != nil || string(got) != msg {
		t.Errorf("termination message %q (%v), want %q", got, err, msg)
	}
	missing := filepath.Join(dir, "none")
	writeTerminationMessage(missing, msg)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a termination message file was created outside a container: %v", err)
	}
}
