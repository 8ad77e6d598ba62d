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

package cache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// These tests start real redis-server and memcached processes with what the
// builders render, on free loopback ports.

// TestRedisConfigLoads starts redis-server on the rendered redis.conf and
// reads the memory and replication settings back from the running server.
func TestRedisConfigLoads(t *testing.T) {
	server := requireBinary(t, "redis-server", "redis-server")
	for _, tc := range []struct {
		memory     string
		persistent bool
		policy     string
	}{
		{"64Mi", false, "allkeys-lru"},
		{"1Gi", false, "allkeys-lru"},
		{"256Mi", true, "noeviction"},
	} {
		t.Run(fmt.Sprintf("%s persistent=%t", tc.memory, tc.persistent), func(t *testing.T) {
			c := newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
				c.Spec.Memory = new(resource.MustParse(tc.memory))
				if tc.persistent {
					c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
				}
			})
			conf := redisConfFiles(t, c, testPassword)
			port := freePort(t)
			cmd := exec.Command(server, conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
			cmd.Dir = t.TempDir() // the pod's workingDir
			start(t, cmd)
			r := dialRedis(t, port, testPassword)

			want := map[string]string{
				"maxmemory":                strconv.FormatInt(RedisMaxMemory(c), 10),
				"maxmemory-policy":         tc.policy,
				"appendonly":               map[bool]string{true: "yes", false: "no"}[tc.persistent],
				"repl-timeout":             strconv.FormatInt(RedisReplTimeout(c), 10),
				"repl-ping-replica-period": "5",
			}
			for key, value := range want {
				got, err := r.do("CONFIG", "GET", key)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || got[1] != value {
					t.Errorf("CONFIG GET %s = %q, want %q", key, got, value)
				}
			}
		})
	}
}

// testPassword has what a password of the user's may have and redis.conf
// must quote: a quote, a backslash, spaces, a tab, a hash, a dollar and
// UTF-8.
const testPassword = "p\"a\\ss w0rd\t# $HOME 'é'"

// redisConfFiles writes what a redis pod mounts, redis.conf and, when the
// Cache asks for a password, redis-auth.conf, the latter in a directory of
// the test's instead of redisAuthDir. It returns redis.conf's path.
func redisConfFiles(t *testing.T, c *v1alpha1.Cache, password string) string {
	t.Helper()
	conf := RedisConfig(c)
	if c.RedisAuthEnabled() {
		auth := writeFile(t, redisAuthFile, string(CredentialsData(c, password)[redisAuthFile]))
		include := "include " + redisAuthDir + "/" + redisAuthFile + "\n"
		if !strings.Contains(conf, include) {
			t.Fatalf("redis.conf does not include the password settings:\n%s", conf)
		}
		conf = strings.Replace(conf, include, "include "+auth+"\n", 1)
	}
	return writeFile(t, "redis.conf", conf)
}

// TestRedisAuthServer checks the password settings on a real server: a client
// that has not authenticated is refused, one with the password is served,
// and with auth turned off nothing is asked.
func TestRedisAuthServer(t *testing.T) {
	server := requireBinary(t, "redis-server", "redis-server")
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled=%t", enabled), func(t *testing.T) {
			c := newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
				c.Spec.Redis = &v1alpha1.RedisSettings{Auth: &v1alpha1.RedisAuth{Enabled: &enabled}}
			})
			port := freePort(t)
			cmd := exec.Command(server, redisConfFiles(t, c, testPassword), "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
			cmd.Dir = t.TempDir()
			start(t, cmd)
			password := ""
			if enabled {
				password = testPassword
			}
			dialRedis(t, port, password) // authenticates when asked to, and PINGs
			anonymous := &redisConn{conn: dial(t, port)}
			anonymous.r = bufio.NewReader(anonymous.conn)
			got, err := anonymous.do("GET", "k")
			switch {
			case enabled && (err == nil || !strings.HasPrefix(err.Error(), "NOAUTH")):
				t.Errorf("GET without AUTH = %q, %v; want NOAUTH", got, err)
			case !enabled && err != nil:
				t.Errorf("GET without auth = %v", err)
			}
			if enabled {
				if _, err := anonymous.do("AUTH", "wrong"); err == nil {
					t.Errorf("AUTH with a wrong password succeeded")
				}
			}
		})
	}
}

// TestRedisReplicaOf starts a primary and a replica through the StatefulSet's
// start script, as ordinals 0 and 1, with a password that needs quoting, and
// checks that a key written to the primary reaches the replica (which
// authenticates to the primary with masterauth), which refuses writes.
func TestRedisReplicaOf(t *testing.T) {
	server := requireBinary(t, "redis-server", "redis-server")
	c := newCache(v1alpha1.EngineRedis)
	conf := redisConfFiles(t, c, testPassword)
	primaryPort, replicaPort := freePort(t), freePort(t)
	node := func(hostname string, port int) *exec.Cmd {
		cmd := exec.Command("sh", "-c", RedisStartScript, "redis-server",
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1")
		cmd.Dir = t.TempDir() // the pod's workingDir
		cmd.Env = append(os.Environ(),
			"PATH="+filepath.Dir(server)+":"+os.Getenv("PATH"),
			"HOSTNAME="+hostname,
			"REDIS_CONFIG="+conf,
			"REDIS_PRIMARY_HOST=127.0.0.1",
			"REDIS_PRIMARY_PORT="+strconv.Itoa(primaryPort))
		return cmd
	}
	start(t, node("sessions-0", primaryPort))
	start(t, node("sessions-1", replicaPort))
	primary, replica := dialRedis(t, primaryPort, testPassword), dialRedis(t, replicaPort, testPassword)

	if got, err := primary.do("SET", "greeting", "hello"); err != nil || got[0] != "OK" {
		t.Fatalf("SET on the primary = %q, %v", got, err)
	}
	deadline := time.Now().Add(30 * time.Second) // the primary waits a few seconds before a full sync
	for {
		got, err := replica.do("GET", "greeting")
		if err == nil && len(got) == 1 && got[0] == "hello" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never had the key: GET = %q, %v", got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := replica.do("SET", "greeting", "bye"); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("SET on the replica: err = %v, want READONLY", err)
	}
	role, err := primary.do("ROLE")
	if err != nil || role[0] != "master" {
		t.Errorf("ROLE of ordinal 0 = %q, %v; want master", role, err)
	}
}

// TestMemcachedArgs starts memcached with the rendered arguments and reads
// the memory and connection limits back from the running server.
func TestMemcachedArgs(t *testing.T) {
	server := requireBinary(t, "memcached", "memcached")
	for _, memory := range []string{"64Mi", "256Mi", "1Gi"} {
		t.Run(memory, func(t *testing.T) {
			c := newCache(v1alpha1.EngineMemcached, func(c *v1alpha1.Cache) {
				c.Spec.Memory = new(resource.MustParse(memory))
			})
			port := freePort(t)
			args := append(MemcachedArgs(c), "-p", strconv.Itoa(port), "-l", "127.0.0.1")
			if os.Geteuid() == 0 {
				args = append(args, "-u", "nobody") // memcached refuses to run as root
			}
			start(t, exec.Command(server, args...))
			stats := memcachedStats(t, port, "stats")
			if got, want := stats["limit_maxbytes"], strconv.FormatInt(MemcachedMegabytes(c)<<20, 10); got != want {
				t.Errorf("limit_maxbytes = %q, want %q", got, want)
			}
			settings := memcachedStats(t, port, "stats settings")
			if got, want := settings["maxconns"], strconv.Itoa(MemcachedConnections); got != want {
				t.Errorf("maxconns = %q, want %q", got, want)
			}
		})
	}
}

// requireBinary finds a server binary, or skips the test when it is missing,
// unless STEWARD_REQUIRE_SERVERS=1.
func requireBinary(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not found: install the Debian package %s", name, debianPackage)
		if os.Getenv("STEWARD_REQUIRE_SERVERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// start runs cmd until the test ends, with its output in the test log on failure.
func start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", cmd.Args[0], out)
		}
	})
}

// dial connects to a server on a loopback port, waiting for it to listen.
func dial(t *testing.T, port int) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			t.Cleanup(func() { _ = conn.Close() })
			_ = conn.SetDeadline(time.Now().Add(time.Minute))
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("server on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// redisConn speaks just enough RESP for these tests.
type redisConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialRedis connects, authenticates with password unless it is empty, and
// waits for PONG.
func dialRedis(t *testing.T, port int, password string) *redisConn {
	conn := dial(t, port)
	rc := &redisConn{conn: conn, r: bufio.NewReader(conn)}
	if password != "" {
		if _, err := rc.do("AUTH", password); err != nil {
			t.Fatalf("AUTH: %v", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // redis accepts connections before it has loaded its data
		got, err := rc.do("PING")
		if err == nil && got[0] == "PONG" {
			return rc
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING = %q, %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// do sends a command and returns the reply as strings: one for a simple
// string, integer or bulk string, one per element for an array. An error
// reply is returned as an error.
func (c *redisConn) do(args ...string) ([]string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return c.reply()
}

func (c *redisConn) reply() ([]string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return []string{""}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return []string{string(buf[:n])}, nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var out []string
		for range n {
			v, err := c.reply()
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// memcachedStats sends a stats command and returns its STAT lines as a map.
func memcachedStats(t *testing.T, port int, command string) map[string]string {
	t.Helper()
	conn := dial(t, port)
	if _, err := fmt.Fprintf(conn, "%s\r\n", command); err != nil {
		t.Fatal(err)
	}
	stats := map[string]string{}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "END" {
			return stats
		}
		if f := strings.Fields(line); len(f) == 3 && f[0] == "STAT" {
			stats[f[1]] = f[2]
		}
	}
	t.Fatalf("%s: no END: %v", command, sc.Err())
	return nil
}
