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

package images

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/build/ociimage"
	"github.com/steward-dev/steward/internal/testenv/ctrtest"
)

// run is one command in an image, as the user Steward's pods run it as
// (uid 0: the image's own user) and the words its output must hold.
type run struct {
	uid  int
	cmd  []string
	want []string
}

var runs = map[string][]run{
	"postgres": {
		{999, []string{"initdb", "--version"}, []string{"initdb (PostgreSQL) 15."}},
		// The instance manager's and the backup jobs' programs: a cluster
		// initialised, started, queried, dumped and stopped as 999.
		{999, []string{"sh", "-c", `set -e
initdb -D /tmp/pg --no-locale -E UTF8 -A trust >/dev/null
pg_ctl -D /tmp/pg -l /tmp/pg.log -o "-c listen_addresses=" -w start >/dev/null
psql -d postgres -Atc "select 'answer ' || 6*7"
pg_dump -d postgres -Fc -f /tmp/dump && pg_restore -l /tmp/dump | grep -c . >/dev/null && echo restored
pg_basebackup --version
pg_ctl -D /tmp/pg -w stop >/dev/null`}, []string{"answer 42", "restored", "pg_basebackup (PostgreSQL) 15."}},
	},
	"mariadb": {
		{999, []string{"sh", "-c", `set -e
mkdir -p /var/lib/mysql/data
mariadb-install-db --no-defaults --datadir=/var/lib/mysql/data --auth-root-authentication-method=normal --skip-test-db >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
mariadbd --no-defaults --datadir=/var/lib/mysql/data --socket=/run/mysqld/t.sock --pid-file=/run/mysqld/t.pid --skip-networking >/tmp/server.log 2>&1 &
for i in $(seq 1 100); do [ -S /run/mysqld/t.sock ] && break; sleep 0.2; done
mariadb --no-defaults -S /run/mysqld/t.sock -uroot -N -e "select concat('answer ', 6*7)"
mariadb-dump --no-defaults -S /run/mysqld/t.sock -uroot --all-databases | grep -q 'CREATE TABLE' && echo dumped
mariadb-admin --no-defaults -S /run/mysqld/t.sock -uroot shutdown`}, []string{"answer 42", "dumped"}},
	},
	"redis": {
		{999, []string{"sh", "-c", `redis-server --port 7777 --daemonize yes --dir /data >/dev/null && sleep 0.5 && redis-cli -p 7777 ping && redis-cli -p 7777 shutdown nosave`}, []string{"PONG"}},
	},
	"memcached": {
		{0, []string{"memcached", "--version"}, []string{"memcached 1.6."}},
	},
	"nginx": {
		{0, []string{"nginx", "-t"}, []string{"test is successful"}},
		{0, []string{"sh", "-c", `nginx && sleep 0.5 && curl -sS http://localhost:8080/ && id -u`}, []string{"Welcome to nginx!", "nginx-unprivileged:1.22", "101"}},
	},
	"pause": {
		{0, []string{"/pause", "-v"}, []string{"pause"}},
	},
	"steward": {
		{0, []string{"/steward", "copy-binary", "/tmp/steward"}, nil},
	},
}

// TestArchivesInContainerd imports every archive of bin/images into a
// private containerd, as a node's kubelet finds it, and runs the engines'
// programs in it as the users Steward's pods run them as.
func TestArchivesInContainerd(t *testing.T) {
	if testing.Short() {
		t.Skip("imports and runs every image")
	}
	var present []Definition
	for _, d := range Definitions("") {
		if _, err := os.Stat(filepath.Join(archiveDir, d.Short+".tar")); err == nil {
			present = append(present, d)
		} else if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
			t.Errorf("STEWARD_REQUIRE_REAL_NODE=1 but %s.tar is missing: run make images", d.Short)
		}
	}
	if len(present) == 0 {
		ctrtest.Require(t)
		t.Skip("no archives in bin/images: make images builds them")
	}
	d := ctrtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, def := range present {
		t.Run(def.Short, func(t *testing.T) {
			if err := d.Import(ctx, filepath.Join(archiveDir, def.Short+".tar")); err != nil {
				t.Fatal(err)
			}
			names, err := d.Images(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The steward image is named by make's IMG.
			want := def.Names
			if def.Short == "steward" {
				c, err := ociimage.Read(filepath.Join(archiveDir, "steward.tar"), nil)
				if err != nil {
					t.Fatal(err)
				}
				want = c.Names
			}
			for _, n := range want {
				if !slices.Contains(names, n) {
					t.Fatalf("ctr images ls shows %v, not %s", names, n)
				}
			}
			for _, r := range runs[def.Short] {
				var out string
				// ctr can lose the whole output of a short-lived
				// container (its I/O attaches after the process
				// exited): a run that succeeded without a word is run
				// again.
				for attempt := 1; attempt <= 3; attempt++ {
					if r.uid == 0 {
						out, err = d.Run(ctx, want[0], r.cmd...)
					} else {
						env := append(slices.Clone(def.Config.Env), "HOSTNAME="+def.Short+"-0")
						out, err = d.RunAs(ctx, want[0], r.uid, r.uid, env, r.cmd...)
					}
					if err != nil || strings.TrimSpace(out) != "" || len(r.want) == 0 {
						break
					}
					t.Logf("%s: succeeded without output (attempt %d)", strings.Join(r.cmd, " "), attempt)
				}
				if err != nil {
					t.Errorf("%s: %v", strings.Join(r.cmd, " "), err)
					continue
				}
				for _, w := range r.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s: output lacks %q:\n%s", strings.Join(r.cmd, " "), w, out)
					}
				}
			}
		})
	}
}
