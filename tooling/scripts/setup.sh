#!/usr/bin/env bash
# Sets up a fresh machine: system packages for the native kernels (when root with apt),
# pnpm at the pinned version, dependencies from the lockfile, and a build of every package.
# libopenblas-pthread-dev holds libopenblas.a: the build links it statically and copies the
# binary into the prebuilt package @rl2/engine-linux-x64-gnu (packages/engine/npm/), which the
# engine loads first, so the repository runs the very binary npm users get.
set -euo pipefail
cd "$(dirname "$0")/../.."

PNPM_VERSION=10.34.9
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  need=()
  for p in libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgloo-dev g++ make python3; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing system packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
else
  echo "setup: not root or no apt-get; native kernels need libopenblas-pthread-dev and a C compiler (the pure path is used without them); Gloo collectives need libgloo-dev (socket collectives are used without it)"
fi

if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi

pnpm install --frozen-lockfile
pnpm build
