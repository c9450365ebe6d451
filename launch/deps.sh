#!/usr/bin/env bash
# Install the Debian packages ringrt builds against, if missing. As root it
# runs apt-get; otherwise it names what to install and fails.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config python3 openmpi-bin libopenmpi-dev libhwloc-dev libopenblas-dev libhdf5-dev
      slurm-wlm munge)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "ringrt: missing Debian packages: ${missing[*]}" >&2
  echo "        install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "ringrt: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
