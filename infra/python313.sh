#!/usr/bin/env bash
# Print the path of a Python 3.13 interpreter: python3.13 on the PATH, else pyenv's (the
# machines this project runs on have pyenv 3.13). The functions' Lambda runtime is 3.13;
# `make test313`, `make test-localstack` and `sam build` use it.
set -euo pipefail
for candidate in "$(command -v python3.13 || true)" /root/.pyenv/versions/3.13.*/bin/python3.13 \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13.*/bin/python3.13; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
        echo "$candidate"
        exit 0
    fi
done
echo "no Python 3.13 found (install it with pyenv: pyenv install 3.13)" >&2
exit 1
