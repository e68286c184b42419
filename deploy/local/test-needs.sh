#!/usr/bin/env bash
# Says in one line what `make test` needs that this machine lacks, and exits 1 if anything.
# .ci/run installs all of it on Debian before it calls make test.
set -u
missing=()
command -v go >/dev/null 2>&1 || missing+=(go)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v podman >/dev/null 2>&1 || command -v buildah >/dev/null 2>&1 || command -v docker >/dev/null 2>&1 || missing+=(podman)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# deploy/conformance runs the JavaScript clients (it installs their packages with npm ci).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "make test needs: ${missing[*]} (on Debian, .ci/run installs them as root; or apt-get install ${missing[*]}); make test-short needs none of them" >&2
  exit 1
fi
