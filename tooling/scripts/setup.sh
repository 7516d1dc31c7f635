#!/usr/bin/env bash
# Sets up a fresh machine: system packages for the native kernels (when root with apt),
# pnpm at the pinned version, dependencies from the lockfile, and a build of every package.
# libopenblas-pthread-dev holds libopenblas.a: the build links it statically and copies the
# binary into the prebuilt package @rl2/engine-linux-x64-gnu (packages/engine/npm/), which the
# engine loads first, so the repository runs the very binary npm users get.
set -euo pipefail
cd "$(dirname "$0")/../.."

PNPM_VERSION=10.34.9
# node-llama-cpp (dev dependency of `pnpm bench decode`) uses its prebuilt binaries; never a download.
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
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
  # WebGPU without a GPU: Dawn (npm webgpu) needs a Vulkan driver. Mesa 25's lavapipe (a software
  # adapter) comes from bookworm-backports; bookworm's own Mesa 22.3 is refused by Dawn. It sits
  # beside a real GPU driver (its own ICD file) and never replaces one; rl2's `auto` ignores it.
  if ! dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -qE '^(2[5-9]|[3-9][0-9])\.'; then
    echo "setup: installing Mesa 25 lavapipe (software Vulkan adapter for the WebGPU tests)"
    if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ]; then
      grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/ ||
        echo "deb http://deb.debian.org/debian bookworm-backports main" >/etc/apt/sources.list.d/rl2-backports.list
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers libvulkan1 >/dev/null
    else
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
    fi
  fi
else
  echo "setup: not root or no apt-get; native kernels need libopenblas-pthread-dev and a C compiler (the pure path is used without them); Gloo collectives need libgloo-dev (socket collectives are used without it); WebGPU needs a Vulkan driver (Mesa 25 mesa-vulkan-drivers for a software adapter)"
fi

if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi

pnpm install --frozen-lockfile
pnpm build
