#!/usr/bin/env bash
# Installs the system libraries CrashCapture builds against, if any is missing (Debian/Ubuntu),
# and elfutils, whose eu-stack the tests take as the truth for other threads' stacks, and binutils,
# whose readelf, nm, addr2line and objcopy they take as the truth for symbolication.
set -euo pipefail
needed=(libunwind-dev libsqlite3-dev zlib1g-dev elfutils binutils)
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "swift is not on PATH" >&2; exit 1; }
