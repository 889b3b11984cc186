#!/usr/bin/env bash
# Installs the system tools the benchmarks compare against (restic, rclone) with apt-get
# when running as root; otherwise prints one line naming what is missing and exits 1.
set -euo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage: scripts/ensure-bench-deps.sh   install restic and rclone (Debian, as root) if missing"
  exit 0
fi

missing=()
for tool in restic rclone; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

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
