#!/usr/bin/env bash
# Installs the system packages the test suite starts (redis-server, PostgreSQL server,
# Debian's chromium for the Dagit UI tests, and GNU wget whose WARCs the import reads) with apt-get when it can; otherwise one clear line.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
# tests/ui drive it with playwright's Python package (executable_path): no browser download.
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || [ -n "${CHROMIUM:-}" ] || missing+=(chromium)
[ -x /usr/bin/wget ] || missing+=(wget)  # tests/testkit/test_wget_warcs.py runs /usr/bin/wget
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The Debian package starts a system instance we do not use; tests start their own.
  exit 0
fi
if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "error: missing system packages: ${missing[*]} (install them: apt-get install ${missing[*]}; or set REDIS_URL / DATABASE_URL to running servers, CHROMIUM to a Chromium binary)" >&2
exit 1
