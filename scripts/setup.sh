#!/usr/bin/env bash
# Installs the system libraries CrashCapture builds against, if any is missing (Debian/Ubuntu),
# and elfutils, whose eu-stack the tests take as the truth for other threads' stacks, and binutils,
# whose readelf, nm, addr2line and objcopy they take as the truth for symbolication, and
# debuginfod (the real server the symbol-store tests fetch debug files from), and tini (the init a
# crash-time upload test runs the program under, as `docker run --init` does), strace (whose report
# of the final signal scripts/death-check.sh compares), debootstrap (the minimal Debian root
# filesystem scripts/slim-image-check.sh runs a static-stdlib program in), lldb-16 (the debugger
# the minidump tests open crash-inspect's minidumps in), and what the arm64
# checks cross-compile and emulate with (scripts/arm64-check.sh: the arm64 architecture added to
# dpkg, gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user-static, libc6-dev:arm64,
# libstdc++6:arm64); then the Python test
# oracles (Sentry's sentry-sdk envelope parser, sentry-relay's normalizer, symbolic, the minidump parser,
# sentry-cli for the debug files' ids) into
# .venv-oracles with pip (Tests/Oracles/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
needed=(libsqlite3-dev zlib1g-dev elfutils binutils debuginfod tini strace debootstrap lldb-16)
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# arm64 (scripts/arm64-check.sh): the core cross-compiled and run under qemu-user, C-only and with
# its C++ side (g++ for cc_terminate.cpp; libstdc++6:arm64, the C++ program's runtime library
# under qemu). The :arm64 packages need the architecture in dpkg first.
arm64_needed=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static libc6-dev:arm64 libstdc++6:arm64)
for pkg in "${arm64_needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "== adding the arm64 architecture to dpkg (for libc6-dev:arm64, libstdc++6:arm64)"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO dpkg --add-architecture arm64
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "swift is not on PATH" >&2; exit 1; }
if ! .venv-oracles/bin/python -c "import sentry_sdk, sentry_relay, symbolic, minidump, opentelemetry.proto.collector.logs.v1.logs_service_pb2" 2>/dev/null \
   || ! cmp -s Tests/Oracles/requirements.txt .venv-oracles/requirements.txt; then
  echo "== installing the Python test oracles into .venv-oracles"
  rm -rf .venv-oracles
  if ! python3 -m venv .venv-oracles 2>/dev/null; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv python3-pip >/dev/null
    python3 -m venv .venv-oracles
  fi
  .venv-oracles/bin/pip install -q --disable-pip-version-check -r Tests/Oracles/requirements.txt
  cp Tests/Oracles/requirements.txt .venv-oracles/requirements.txt
fi
