#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds tests/install/consumer (a project of
# its own) against it with CMake and compiles it once more with pkg-config, and runs both.
# Usage: install_consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

portable=$(sed -n 's/^SHARDSCOPE_PORTABLE:BOOL=//p' "$build/CMakeCache.txt")
native_ok=$(sed -n 's/^SHARDSCOPE_INSTALL_NATIVE:BOOL=//p' "$build/CMakeCache.txt")
if [[ $portable != ON && $native_ok != ON ]]; then
  # A native build must not install unless asked.
  if cmake --install "$build" --prefix "$tmp/refused" >"$tmp/refused.log" 2>&1; then
    echo "FAIL: a -march=native build installed without SHARDSCOPE_INSTALL_NATIVE"; exit 1
  fi
  grep -q "SHARDSCOPE_PORTABLE=ON" "$tmp/refused.log" || { cat "$tmp/refused.log"; exit 1; }
  [[ ! -e $tmp/refused/lib ]] || { echo "FAIL: the refused install copied libraries"; exit 1; }
  echo "native build refused without asking: ok"
fi
SHARDSCOPE_INSTALL_NATIVE=1 cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"

for f in bin/shardscope include/shardscope/shardscope.h include/shardscope/store/reader.h \
         include/shardscope/base/format.h lib/libshardscope_core.a lib/libshardscope_store.a \
         lib/cmake/Shardscope/ShardscopeConfig.cmake lib/pkgconfig/shardscope.pc; do
  [[ -e $prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
done
if grep -q "SHARDSCOPE_BUILD_GUI:BOOL=ON" "$build/CMakeCache.txt"; then
  for f in bin/shardscope-gui bin/shardscope-render lib/libshardscope_viewer.a; do
    [[ -e $prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
  done
fi
# Nothing installed may point back into the source or build tree.
if grep -rl -e "$src" -e "$build" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  echo "FAIL: the package refers to the source or build tree"; exit 1
fi

cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer" "$src/samples/models/ffn.yaml" | tee "$tmp/cmake.out"
grep -q "redistribution \[dp | -\] -> \[- | mp\]: [1-9]" "$tmp/cmake.out"
grep -q "searched ffn on 8 devices (dynamic_programming): 1[0-9] operators" "$tmp/cmake.out"

# The same program through pkg-config alone.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
${CXX:-c++} -O1 "$src/tests/install/consumer/main.cc" -o "$tmp/consumer_pc" \
  $(pkg-config --cflags --libs shardscope)
"$tmp/consumer_pc" "$src/samples/models/ffn.yaml" >"$tmp/pc.out"
cmp "$tmp/cmake.out" "$tmp/pc.out"
echo "install and consume: ok"
