#!/usr/bin/env bash
# Installs the Debian packages Shardscope needs, only those missing.
# As root: installs non-interactively. Otherwise: prints the apt-get line and fails.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev qt6-charts-dev libqt6opengl6-dev
  libgraphviz-dev graphviz libeigen3-dev libopenmpi-dev openmpi-bin
  libsqlite3-dev sqlite3 libcli11-dev nlohmann-json3-dev libyaml-cpp-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev xvfb libxml2-utils
  libonnx-dev libprotobuf-dev libonnx-testdata
  clang libclang-rt-14-dev llvm
)
if [[ "${1:-}" == "--demo-data" ]]; then PACKAGES+=(dataset-fashion-mnist); fi
if [[ "${1:-}" == "--bench" ]]; then PACKAGES+=(python3-torch libopenblas0-pthread); fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "Shardscope needs these Debian packages. Run as root:" >&2
  echo "  apt-get update && $line" >&2
  exit 1
fi
echo "Installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
