#!/usr/bin/env bash
# Installs the database servers the tests run Steward's engine code against
# (PostgreSQL, MariaDB, Redis, memcached) from Debian's packages, when they
# are missing. Needs root (or sudo) and apt. Idempotent.
set -euo pipefail

packages=()
for pair in postgresql:/usr/lib/postgresql/15/bin/postgres mariadb-server:/usr/sbin/mariadbd \
  mariadb-client:/usr/bin/mariadb-dump redis-server:/usr/bin/redis-server memcached:/usr/bin/memcached; do
  [ -x "${pair#*:}" ] || packages+=("${pair%%:*}")
done
[ ${#packages[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "test-servers: installing ${packages[*]}"
$sudo apt-get update -qq
# The packages' own services are not started: the tests start servers
# themselves, on loopback, in temporary directories.
made_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  echo exit 101 | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  made_policy=1
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}"
[ -z "$made_policy" ] || $sudo rm -f /usr/sbin/policy-rc.d
