#!/usr/bin/env bash
# Installs the named Debian packages that are missing (as root); a no-op when all are present.
# Usage: scripts/install_packages.sh WHO PACKAGE...   (WHO names the caller in messages)
set -euo pipefail

who=$1
shift
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "$who: missing packages (${missing[*]}); run as root to install them" >&2
  exit 1
fi
echo "$who: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
