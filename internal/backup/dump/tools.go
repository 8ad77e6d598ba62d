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

package dump

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	drv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// dumper is what differs between the engines' dump formats.
type dumper struct {
	ext, format, compression, contentType string
	// gzip: the tool's output is gzip-compressed here.
	gzip bool
}

func dumperFor(typ string) (dumper, error) {
	switch typ {
	case TypePostgreSQL:
		return dumper{ext: "pgdump", format: "pg_dump-custom", compression: "pg_dump", contentType: "application/octet-stream"}, nil
	case TypeMySQL:
		return dumper{ext: "sql.gz", format: "sql", compression: "gzip", contentType: "application/gzip", gzip: true}, nil
	case TypeMongoDB:
		return dumper{ext: "archive.gz", format: "mongodump-archive", compression: "mongodump", contentType: "application/octet-stream"}, nil
	}
	return dumper{}, fmt.Errorf("unknown database type %q (want %s, %s or %s)", typ, TypePostgreSQL, TypeMySQL, TypeMongoDB)
}

// program finds the first of names in binDir, or else on $PATH, /usr/bin or
// /usr/local/bin.
func program(binDir string, names ...string) (string, error) {
	for _, name := range names {
		if binDir != "" {
			p := filepath.Join(binDir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/bin", "/usr/local/bin"} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
	}
	where := "$PATH"
	if binDir != "" {
		where = binDir
	}
	return "", fmt.Errorf("%s not found in %s", strings.Join(names, " or "), where)
}

// tool is a prepared dump or restore program with its password file.
type tool struct {
	cmd  *exec.Cmd
	name string
	tail *tailBuffer
	dir  string
}

func (t *tool) cleanup() { _ = os.RemoveAll(t.dir) }

// cleanEnv is our environment without the variables by which the tools
// would pick up other credentials or servers.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "MYSQL") || strings.HasPrefix(kv, "MARIADB") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// secretFile writes content into a new file of mode 0600 in dir.
func secretFile(dir, name, content string) (string, error) {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return "", err
	}
	return p, f.Close()
}

// pgConninfo is a libpq connection string without the password.
func pgConninfo(s Source) string {
	q := func(v string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	}
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s connect_timeout=15",
		q(s.Host), s.port(), q(s.Username), q(s.Database))
}

// optionValue quotes a value for a MySQL option file.
func optionValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// yamlString quotes a value as a YAML double-quoted string.
func yamlString(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// MySQLOptionFile writes a MySQL/MariaDB client option file with s's
// connection and credentials into dir, readable by its owner only, and
// returns its path.
func MySQLOptionFile(dir string, s Source) (string, error) { return mysqlOptions(dir, s) }

// mysqlOptions writes the client option file.
func mysqlOptions(dir string, s Source) (string, error) {
	proto := fmt.Sprintf("protocol = tcp\nhost = %s\nport = %d\n", optionValue(s.Host), s.port())
	if strings.HasPrefix(s.Host, "/") {
		proto = fmt.Sprintf("protocol = socket\nsocket = %s\n", optionValue(s.Host))
	}
	return secretFile(dir, "client.cnf", "[client]\n"+proto+
		fmt.Sprintf("user = %s\npassword = %s\n", optionValue(s.Username), optionValue(s.Password)))
}

// command prepares the dump tool (restore false) or the restore tool of
// s.Type with its credentials in a private temporary directory. fromDB is
// the database a restored backup was taken of.
func command(s Source, restore, overwrite bool, fromDB, tempDir string) (*tool, error) {
	dir, err := os.MkdirTemp(tempDir, "steward-dump-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for the password file: %w", err)
	}
	t := &tool{dir: dir, tail: &tailBuffer{max: 4096}}
	fail := func(err error) (*tool, error) {
		t.cleanup()
		return nil, err
	}
	env := cleanEnv()
	var path string
	var args []string
	switch s.Type {
	case TypePostgreSQL:
		if strings.ContainsAny(s.Password, "\r\n") || strings.ContainsAny(s.Username, "\r\n") {
			return fail(errors.New("a PostgreSQL password file cannot hold a line break in the user name or password"))
		}
		esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
		pass, err := secretFile(dir, "pgpass", fmt.Sprintf("*:*:*:%s:%s\n", esc.Replace(s.Username), esc.Replace(s.Password)))
		if err != nil {
			return fail(err)
		}
		env = append(env, "PGPASSFILE="+pass)
		if restore {
			path, err = program(s.BinDir, "pg_restore")
			args = []string{"--format=custom", "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", "--no-password"}
			if overwrite {
				args = append(args, "--clean", "--if-exists")
			}
			args = append(args, "--dbname="+pgConninfo(s))
		} else {
			path, err = program(s.BinDir, "pg_dump")
			args = []string{"--format=custom", "--no-password", "--dbname=" + pgConninfo(s)}
		}
		if err != nil {
			return fail(err)
		}
	case TypeMySQL:
		opt, err := mysqlOptions(dir, s)
		if err != nil {
			return fail(err)
		}
		if restore {
			path, err = program(s.BinDir, "mariadb", "mysql")
			if err != nil {
				return fail(err)
			}
			args = []string{"--defaults-file=" + opt, "--binary-mode", "--max-allowed-packet=1073741824", "--database=" + s.Database}
		} else {
			path, err = program(s.BinDir, "mariadb-dump", "mysqldump")
			if err != nil {
				return fail(err)
			}
			args = []string{"--defaults-file=" + opt, "--single-transaction", "--routines", "--triggers", "--events",
				"--hex-blob", "--no-tablespaces", "--default-character-set=utf8mb4", "--max-allowed-packet=1073741824"}
			if !isMariaDB(path) {
				// MySQL's own mysqldump: a GTID_PURGED statement would make
				// the dump fail to load into a server with GTIDs of its own.
				args = append(args, "--set-gtid-purged=OFF")
			}
			args = append(args, s.Database)
		}
	case TypeMongoDB:
		cfg, err := secretFile(dir, "mongo.yaml", "password: "+yamlString(s.Password)+"\n")
		if err != nil {
			return fail(err)
		}
		args = []string{"--host=" + s.Host, "--port=" + strconv.Itoa(s.port()), "--username=" + s.Username,
			"--authenticationDatabase=admin", "--config=" + cfg, "--archive", "--gzip"}
		if restore {
			path, err = program(s.BinDir, "mongorestore")
			// Renames the backup's database to the target's.
			args = append(args, "--nsFrom="+fromDB+".$coll$", "--nsTo="+s.Database+".$coll$")
			if overwrite {
				args = append(args, "--drop")
			}
		} else {
			path, err = program(s.BinDir, "mongodump")
			args = append(args, "--db="+s.Database)
		}
		if err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown database type %q", s.Type))
	}
	t.name = filepath.Base(path)
	t.cmd = exec.Command(path, args...)
	t.cmd.Env = env
	t.cmd.Stderr = t.tail
	return t, nil
}

// isMariaDB reports whether a mysqldump program is MariaDB's.
func isMariaDB(path string) bool {
	if strings.HasPrefix(filepath.Base(path), "mariadb") {
		return true
	}
	out, _ := exec.Command(path, "--version").CombinedOutput()
	return bytes.Contains(out, []byte("MariaDB"))
}

// toolError is a failed tool's error with the end of its output, without
// the password.
func toolError(s Source, t *tool, err error) error {
	msg := strings.TrimSpace(t.tail.String())
	if msg == "" {
		return fmt.Errorf("%s failed: %s", t.name, scrub(s, err.Error()))
	}
	return fmt.Errorf("%s failed: %s: %s", t.name, scrub(s, err.Error()), scrub(s, msg))
}

// runDump runs the dump tool with its standard output copied to out.
func runDump(ctx context.Context, s Source, d dumper, out io.Writer, extraArgs []string, opts Options) (string, error) {
	_ = d
	t, err := command(s, false, false, "", opts.TempDir)
	if err != nil {
		return "", err
	}
	defer t.cleanup()
	t.cmd.Args = append(t.cmd.Args, extraArgs...)
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := t.cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %s", t.name, scrub(s, err.Error()))
	}
	stop := context.AfterFunc(ctx, func() { _ = t.cmd.Process.Kill() })
	defer stop()
	_, copyErr := io.Copy(out, stdout)
	if copyErr != nil {
		_ = t.cmd.Process.Kill()
	}
	waitErr := t.cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: %w", t.name, ctx.Err())
	case waitErr != nil:
		return "", toolError(s, t, waitErr)
	case copyErr != nil:
		return "", fmt.Errorf("storing the output of %s: %w", t.name, copyErr)
	}
	if msg := strings.TrimSpace(t.tail.String()); msg != "" {
		opts.logf("backup: %s said: %s", t.name, scrub(s, msg))
	}
	return t.name, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, nil))
}

// pgConnect connects with pgx.
func pgConnect(ctx context.Context, s Source) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cc.Host, cc.Port, cc.User, cc.Password, cc.Database = s.Host, uint16(s.port()), s.Username, s.Password, s.Database
	cc.ConnectTimeout = 15 * time.Second
	return pgx.ConnectConfig(ctx, cc)
}

// mysqlOpen opens a MySQL connection pool.
func mysqlOpen(s Source) (*sql.DB, error) {
	dc := drv.NewConfig()
	dc.Net, dc.Addr = "tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.port()))
	if strings.HasPrefix(s.Host, "/") {
		dc.Net, dc.Addr = "unix", s.Host
	}
	dc.User, dc.Passwd, dc.DBName = s.Username, s.Password, s.Database
	dc.Timeout = 15 * time.Second
	conn, err := drv.NewConnector(dc)
	if err != nil {
		return nil, errors.New("invalid MySQL connection settings")
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// serverVersion asks the server for its version.
func serverVersion(ctx context.Context, s Source) (string, error) {
	var v string
	switch s.Type {
	case TypePostgreSQL:
		c, err := pgConnect(ctx, s)
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
		err = c.QueryRow(ctx, "SELECT version()").Scan(&v)
		return v, err
	case TypeMySQL:
		db, err := mysqlOpen(s)
		if err != nil {
			return "", err
		}
		defer func() { _ = db.Close() }()
		err = db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
		return v, err
	}
	// Asking MongoDB needs a driver this package does not have; mongodump
	// records the server's version in the archive itself.
	return "", nil
}

// countTables counts the tables of the target database: for PostgreSQL in
// every schema but the system's, for MySQL in the database.
func countTables(ctx context.Context, s Source) (int, error) {
	var n int
	switch s.Type {
	case TypePostgreSQL:
		c, err := pgConnect(ctx, s)
		if err != nil {
			return 0, err
		}
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
		err = c.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p', 'f')
			AND n.nspname NOT IN ('pg_catalog', 'information_schema')
			AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'`).Scan(&n)
		return n, err
	case TypeMySQL:
		db, err := mysqlOpen(s)
		if err != nil {
			return 0, err
		}
		defer func() { _ = db.Close() }()
		err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?", s.Database).Scan(&n)
		return n, err
	}
	return 0, fmt.Errorf("checking whether a %s database is empty is not supported", s.Type)
}
