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
	"io/fs"
	"slices"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

// Definition is one image.
type Definition struct {
	// Short names the archive, <Short>.tar, and the image on the command
	// line.
	Short string
	// Names are the image's fully qualified names.
	Names []string
	// Packages are installed with everything they depend on, together
	// with Base, as apt would install them into an empty system.
	Packages []string `json:",omitempty"`
	// Release, when set, is the suite apt prefers for every package
	// (apt-get -t): "bookworm" builds an image of Debian's last point
	// release, without the security updates published after it, so that
	// its server is an earlier minor version than the other image's.
	Release string `json:",omitempty"`
	// VersionTag, when set, names the image also by the version of one of
	// its packages, as the official images are tagged with their full
	// version.
	VersionTag *VersionTag `json:",omitempty"`
	// OnRequest images are built with the others but not loaded into
	// every cluster: the tests that run them import them.
	OnRequest bool `json:",omitempty"`
	// User is the image's service user, in /etc/passwd and /etc/group
	// beside root and nobody.
	User *User `json:",omitempty"`
	// CABundle adds /etc/ssl/certs/ca-certificates.crt, made from
	// Debian's ca-certificates package as update-ca-certificates would.
	CABundle bool `json:",omitempty"`
	// Zoneinfo adds /usr/share/zoneinfo from Debian's tzdata package
	// without installing it (an image with Packages has it from Base).
	Zoneinfo bool `json:",omitempty"`
	// Programs are the Go programs the builder puts into the image.
	Programs []Program `json:",omitempty"`
	Config   ociimage.Config
	// Dirs, Files and Symlinks are added last and replace what the
	// packages put at their paths.
	Dirs     []Dir     `json:",omitempty"`
	Files    []File    `json:",omitempty"`
	Symlinks []Symlink `json:",omitempty"`
	// Require are paths that must lead to a file (through symlinks): what
	// Steward or the image's command runs. A build without one fails.
	Require []string `json:",omitempty"`
}

// VersionTag names an image by the upstream version of a package, without
// its epoch and Debian revision: postgresql-15 15.20-0+deb12u1 makes
// <Repository>:15.20.
type VersionTag struct {
	Repository string
	Package    string
}

// name is the image's name for the package's version among pkgs, "" when
// pkgs do not have it.
func (v VersionTag) name(pkgs []Package) string {
	for _, p := range pkgs {
		if p.Name == v.Package {
			return v.Repository + ":" + p.Upstream()
		}
	}
	return ""
}

// withVersionTag is def named also by its version tag, as resolved to pkgs.
func withVersionTag(def Definition, pkgs []Package) Definition {
	if def.VersionTag == nil {
		return def
	}
	if n := def.VersionTag.name(pkgs); n != "" && !slices.Contains(def.Names, n) {
		def.Names = append(slices.Clone(def.Names), n)
	}
	return def
}

// User is a service user.
type User struct {
	Name        string
	UID, GID    int
	Home, Shell string
}

// Dir is a directory the image needs, with its owner. Mode takes Unix's
// setuid, setgid and sticky bits (0o1777).
type Dir struct {
	Path     string
	Mode     fs.FileMode
	UID, GID int
}

// File is a file the builder writes.
type File struct {
	Path    string
	Mode    fs.FileMode
	Content string
}

// Symlink is a symbolic link the builder adds.
type Symlink struct {
	Path, Target string
}

// Program is a static Go program in the image: built from Package with
// CGO_ENABLED=0 by the builder or, without a Package, the operator's
// binary (Options.StewardBinary). Its content is part of the image's key.
type Program struct {
	Path    string
	Package string `json:",omitempty"`
}

// Base is in every image made of packages: a shell and the tools shell
// scripts such as mariadb-install-db use, the C.UTF-8 locale (libc-bin),
// /etc/services and /etc/protocols (netbase), time zones (tzdata).
// usr-is-merged says the layout is merged already; without it apt picks
// usrmerge for init-system-helpers, and with it Perl.
var Base = []string{
	"bash", "coreutils", "dash", "findutils", "grep", "sed", "gzip", "hostname",
	"procps", "ncurses-base", "netbase", "tzdata", "libc-bin", "usr-is-merged",
}

// DefaultPath is the PATH of the official Debian-based images.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// StewardName is the operator image's repository.
const StewardName = "ghcr.io/steward-dev/steward"

// Definitions are the images the builder knows, the operator's at version.
func Definitions(version string) []Definition {
	return []Definition{
		postgres(), mariadb(), previous(postgres()), previous(mariadb()),
		redis(), memcached(), nginx(), demoApp(), pause(), steward(version),
	}
}

// previous is def built from Debian 12's last point release, named only by
// its version: the minor version an upgrade test starts from. When that
// release has the same version as the security updates, both images run
// the same server.
func previous(def Definition) Definition {
	def.Short += "-previous"
	def.Names = nil
	def.Release = "bookworm"
	def.OnRequest = true
	return def
}

// postgres keeps the official postgres:15 image's contract: the postgres
// user 999, the server's programs on PATH, PGDATA, the socket directory.
func postgres() Definition {
	return Definition{
		Short:      "postgres",
		Names:      []string{"docker.io/library/postgres:15"},
		Packages:   []string{"postgresql-15", "postgresql-client-15"},
		VersionTag: &VersionTag{Repository: "docker.io/library/postgres", Package: "postgresql-15"},
		User:       &User{Name: "postgres", UID: 999, GID: 999, Home: "/var/lib/postgresql", Shell: "/bin/bash"},
		// Backup and restore pods run Steward's copied binary in this
		// image; it reaches object stores over HTTPS.
		CABundle: true,
		Config: ociimage.Config{
			Env: []string{
				DefaultPath + ":/usr/lib/postgresql/15/bin",
				"PG_MAJOR=15",
				"PGDATA=/var/lib/postgresql/data",
				"LANG=C.UTF-8",
			},
			Cmd:          []string{"postgres"},
			ExposedPorts: []string{"5432/tcp"},
			StopSignal:   "SIGINT",
		},
		Dirs: []Dir{
			{Path: "var/lib/postgresql", Mode: 0o755, UID: 999, GID: 999},
			{Path: "var/lib/postgresql/data", Mode: 0o1777, UID: 999, GID: 999},
			{Path: "var/run/postgresql", Mode: 0o2777, UID: 999, GID: 999},
		},
		Require: []string{
			"usr/lib/postgresql/15/bin/postgres", "usr/lib/postgresql/15/bin/initdb",
			"usr/lib/postgresql/15/bin/pg_ctl", "usr/lib/postgresql/15/bin/pg_basebackup",
			"usr/lib/postgresql/15/bin/pg_receivewal",
			"usr/lib/postgresql/15/bin/pg_controldata", "usr/lib/postgresql/15/bin/pg_rewind",
			"usr/bin/psql", "usr/bin/pg_dump", "usr/bin/pg_restore", "usr/bin/perl",
			"usr/bin/sh",
		},
	}
}

// mariadb keeps the official mariadb:10.11 image's contract: the mysql user
// 999, the data and socket directories, the programs Steward's instance
// manager runs (mariadb-install-db, a shell script, mariadbd, mariadb,
// mariadb-dump).
func mariadb() Definition {
	return Definition{
		Short:      "mariadb",
		Names:      []string{"docker.io/library/mariadb:10.11"},
		Packages:   []string{"mariadb-server", "mariadb-client"},
		VersionTag: &VersionTag{Repository: "docker.io/library/mariadb", Package: "mariadb-server"},
		User:       &User{Name: "mysql", UID: 999, GID: 999, Home: "/var/lib/mysql", Shell: "/bin/bash"},
		CABundle:   true,
		Config: ociimage.Config{
			Env:          []string{DefaultPath, "LANG=C.UTF-8"},
			Cmd:          []string{"mariadbd"},
			ExposedPorts: []string{"3306/tcp"},
		},
		Dirs: []Dir{
			{Path: "var/lib/mysql", Mode: 0o755, UID: 999, GID: 999},
			{Path: "run/mysqld", Mode: 0o777, UID: 999, GID: 999},
		},
		Require: []string{
			"usr/bin/mariadb-install-db", "usr/sbin/mariadbd", "usr/bin/mariadb",
			"usr/bin/mariadb-dump", "usr/bin/my_print_defaults", "usr/bin/mysql",
			"usr/bin/mysqldump", "usr/bin/resolveip", "usr/bin/hostname",
			"usr/bin/awk", "usr/bin/sh", "etc/mysql/my.cnf",
		},
	}
}

// redis keeps the official redis:7.0 image's contract: the redis user 999,
// /data as the working directory; Steward runs `sh -c <script>` and probes
// with redis-cli.
func redis() Definition {
	return Definition{
		Short:    "redis",
		Names:    []string{"docker.io/library/redis:7.0"},
		Packages: []string{"redis-server", "redis-tools"},
		User:     &User{Name: "redis", UID: 999, GID: 999, Home: "/data", Shell: "/usr/sbin/nologin"},
		Config: ociimage.Config{
			Env:          []string{DefaultPath},
			Cmd:          []string{"redis-server"},
			WorkingDir:   "/data",
			ExposedPorts: []string{"6379/tcp"},
		},
		Dirs: []Dir{{Path: "data", Mode: 0o755, UID: 999, GID: 999}},
		Require: []string{
			"usr/bin/redis-server", "usr/bin/redis-cli", "usr/bin/sh",
		},
	}
}

// memcached keeps the official memcached:1.6 image's contract: it runs as
// the memcache user 11211.
func memcached() Definition {
	return Definition{
		Short:    "memcached",
		Names:    []string{"docker.io/library/memcached:1.6"},
		Packages: []string{"memcached"},
		User:     &User{Name: "memcache", UID: 11211, GID: 11211, Home: "/home/memcache", Shell: "/usr/sbin/nologin"},
		Config: ociimage.Config{
			User:         "memcache",
			Env:          []string{DefaultPath},
			Cmd:          []string{"memcached"},
			ExposedPorts: []string{"11211/tcp"},
		},
		Dirs:    []Dir{{Path: "home/memcache", Mode: 0o755, UID: 11211, GID: 11211}},
		Require: []string{"usr/bin/memcached"},
	}
}

// nginx keeps the nginx-unprivileged contract: user 101, port 8080, the pid
// file and temporary files under /tmp, logs to the container's output, the
// site in /usr/share/nginx/html. It runs as non-root with every capability
// dropped. curl lets a pod of it be an HTTP client too.
func nginx() Definition {
	return Definition{
		Short:    "nginx",
		Names:    []string{"docker.io/nginxinc/nginx-unprivileged:1.22"},
		Packages: []string{"nginx-light", "curl"},
		User:     &User{Name: "nginx", UID: 101, GID: 101, Home: "/nonexistent", Shell: "/bin/false"},
		Config: ociimage.Config{
			User:         "101",
			Env:          []string{DefaultPath},
			Cmd:          []string{"nginx", "-g", "daemon off;"},
			ExposedPorts: []string{"8080/tcp"},
			StopSignal:   "SIGQUIT",
		},
		Dirs: []Dir{
			{Path: "etc/nginx/conf.d", Mode: 0o775, UID: 101},
			{Path: "var/cache/nginx", Mode: 0o775, UID: 101},
			{Path: "var/log/nginx", Mode: 0o755},
			{Path: "usr/share/nginx/html", Mode: 0o755},
		},
		Files: []File{
			{Path: "etc/nginx/nginx.conf", Mode: 0o644, Content: nginxConf},
			{Path: "etc/nginx/conf.d/default.conf", Mode: 0o664, Content: nginxDefaultConf},
			{Path: "usr/share/nginx/html/index.html", Mode: 0o644, Content: nginxIndex},
			{Path: "usr/share/nginx/html/50x.html", Mode: 0o644, Content: nginx50x},
		},
		Symlinks: []Symlink{
			{Path: "var/log/nginx/access.log", Target: "/dev/stdout"},
			{Path: "var/log/nginx/error.log", Target: "/dev/stderr"},
		},
		Require: []string{"usr/sbin/nginx", "usr/bin/curl", "etc/nginx/mime.types", "usr/bin/sh"},
	}
}

// DemoAppName is the image of the applications in the real-node samples
// and tests.
const DemoAppName = "ghcr.io/steward-dev/demo-app:1"

// demoApp is the nginx image with the PostgreSQL and Redis clients (psql,
// redis-cli; curl is nginx's already): an application that serves a page
// and, through kubectl exec, shows from inside its own pod that the
// database and cache Steward bound into it answer.
func demoApp() Definition {
	d := nginx()
	d.Short = "demo-app"
	d.Names = []string{DemoAppName}
	d.Packages = append(slices.Clone(d.Packages), "postgresql-client-15", "redis-tools")
	d.Require = append(slices.Clone(d.Require), "usr/bin/psql", "usr/bin/redis-cli")
	return d
}

const nginxConf = `# The nginx-unprivileged layout: nginx runs as user 101 without any
# capability, listens on 8080, keeps its pid file and temporary files in
# /tmp and logs to the container's output (/var/log/nginx/*.log are links
# to /dev/stdout and /dev/stderr).
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /tmp/nginx.pid;

events {
    worker_connections  1024;
}

http {
    proxy_temp_path       /tmp/proxy_temp;
    client_body_temp_path /tmp/client_temp;
    fastcgi_temp_path     /tmp/fastcgi_temp;
    uwsgi_temp_path       /tmp/uwsgi_temp;
    scgi_temp_path        /tmp/scgi_temp;

    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    keepalive_timeout  65;

    include /etc/nginx/conf.d/*.conf;
}
`

const nginxDefaultConf = `server {
    listen       8080;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
`

const nginxIndex = `<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>This is nginx 1.22 from Debian's nginx-light package, in an image built
locally as docker.io/nginxinc/nginx-unprivileged:1.22.</p>
</body>
</html>
`

const nginx50x = `<!DOCTYPE html>
<html>
<head>
<title>Error</title>
</head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.</p>
</body>
</html>
`

// pause is the pod sandbox image: a static program that sleeps until it is
// stopped, reaping the zombies of the pod's shared PID namespace.
func pause() Definition {
	return Definition{
		Short:    "pause",
		Names:    []string{"registry.k8s.io/pause:3.10"},
		Programs: []Program{{Path: "pause", Package: "./hack/images/pause"}},
		Config: ociimage.Config{
			User:       "65535:65535",
			Entrypoint: []string{"/pause"},
		},
	}
}

// steward is the operator's image, laid out like distroless static
// nonroot: the operator's static binary and steward-agent beside it, the
// users, CA certificates and time zones.
func steward(version string) Definition {
	return Definition{
		Short: "steward",
		Names: []string{StewardName + ":" + version},
		// The operator, and the agent its pods copy out of this image
		// (`steward copy-binary`) and run.
		Programs: []Program{{Path: "steward"}, {Path: "steward-agent", Package: "./cmd/steward-agent"}},
		CABundle: true,
		Zoneinfo: true,
		Config: ociimage.Config{
			User:       "65532:65532",
			Entrypoint: []string{"/steward"},
			WorkingDir: "/",
			Env:        []string{DefaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			Labels:     map[string]string{"org.opencontainers.image.version": version, "org.opencontainers.image.title": "steward"},
		},
		Dirs: []Dir{
			{Path: "tmp", Mode: 0o1777},
			{Path: "home/nonroot", Mode: 0o700, UID: 65532, GID: 65532},
			{Path: "root", Mode: 0o700},
		},
		Files: []File{
			{Path: "etc/passwd", Mode: 0o644, Content: "root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
			{Path: "etc/group", Mode: 0o644, Content: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
			{Path: "etc/nsswitch.conf", Mode: 0o644, Content: nsswitch},
		},
	}
}

// nsswitch makes the C library look users up in /etc/passwd and names in
// /etc/hosts, then DNS.
const nsswitch = `passwd:         files
group:          files
shadow:         files
gshadow:        files

hosts:          files dns
networks:       files

protocols:      files
services:       files
ethers:         files
rpc:            files

netgroup:       files
`
