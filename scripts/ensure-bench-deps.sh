#!/usr/bin/env bash
# Installs what the benchmarks compare against:
# - restic and rclone (system tools) with apt-get when running as root; otherwise prints one
#   line naming what is missing and exits 1;
# - pywb 2.10.0, replay_bench.py's peer, in its own virtualenv bench/.work/pywb-venv (pip, from
#   the package index configured on this machine). pywb is AGPL: a bench peer only, never a
#   dependency of the project, never installed into the project's virtualenv.
set -euo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage: scripts/ensure-bench-deps.sh   install restic and rclone (Debian, as root) and"
  echo "                                      pywb 2.10.0 in bench/.work/pywb-venv, if missing"
  exit 0
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
status=0

PYWB_VERSION=2.10.0
venv="$root/bench/.work/pywb-venv"
if ! "$venv/bin/python" -c "import pywb, sys; sys.exit(pywb.__version__ != '$PYWB_VERSION')" \
    >/dev/null 2>&1; then
  python="$(command -v python3.11 || command -v python3)"
  echo "installing pywb $PYWB_VERSION into $venv (with $python)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  if ! log=$("$python" -m venv "$venv" 2>&1 && "$venv/bin/pip" install -q "pywb==$PYWB_VERSION" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "error: could not install pywb $PYWB_VERSION into $venv" >&2
    status=1
  fi
fi

missing=()
for tool in restic rclone; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit "$status"

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing benchmark tools: ${missing[*]} (as root: apt-get install ${missing[*]})" >&2
  exit 1
fi

echo "installing benchmark tools: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt prints progress and debconf notes even when quiet; show them only if it fails.
if ! log=$(apt-get update -qq 2>&1 && apt-get install -y -qq --no-install-recommends "${missing[@]}" 2>&1); then
  printf '%s\n' "$log" >&2
  echo "error: apt-get could not install: ${missing[*]}" >&2
  exit 1
fi
exit "$status"
