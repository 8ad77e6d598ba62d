#!/usr/bin/env bash
# Installs the database servers the tests run Steward's engine code against
# (PostgreSQL, MariaDB, Redis, memcached) from Debian's packages, when they
# are missing. Needs root (or sudo) and apt. Idempotent. The tests start the
# servers themselves, on loopback, in temporary directories.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" test-servers \
  postgresql:/usr/lib/postgresql/15/bin/postgres mariadb-server:/usr/sbin/mariadbd \
  mariadb-client:/usr/bin/mariadb-dump redis-server:/usr/bin/redis-server memcached:/usr/bin/memcached
