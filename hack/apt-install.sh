#!/usr/bin/env bash
# Installs Debian packages that are missing, for the scripts beside it:
#   hack/apt-install.sh NAME PACKAGE:PATH...
# installs each PACKAGE whose PATH is not an executable, saying so as NAME.
# Needs root (or sudo) and apt. The packages' own services are not started.
set -euo pipefail

name=$1
shift
packages=()
for pair in "$@"; do
  [ -x "${pair#*:}" ] || packages+=("${pair%%:*}")
done
[ ${#packages[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "$name: installing ${packages[*]}"
$sudo apt-get update -qq
made_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  echo exit 101 | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  made_policy=1
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}"
[ -z "$made_policy" ] || $sudo rm -f /usr/sbin/policy-rc.d
