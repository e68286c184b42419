#!/usr/bin/env bash
# Builds the container images of dataplane, controlplane and gatewayctl (`make images`) with
# podman, buildah or docker, whichever is installed (IMAGE_BUILDER overrides). Each image is a
# static binary (CGO_ENABLED=0, -trimpath) built here with the Go toolchain and copied into
# `FROM scratch` with the host's CA bundle and a passwd/group naming the non-root user 65532,
# so building needs no registry.
#
#   build.sh              build the images
#   build.sh binaries DIR only build the static binaries into DIR
#
# Environment:
#   IMAGE_BUILDER   podman, buildah or docker (default: the first one installed)
#   IMAGE_PREFIX    repository prefix of the tags (default sekgate/)
#   IMAGE_TAG       tag (default: the short git revision, or dev)
#   IMAGE_NAMES     which images (default "dataplane controlplane gatewayctl")
#   IMAGE_BIN_DIR   take already built static binaries from here instead of building them
#   IMAGE_STORAGE   podman/buildah only: private storage directory (tests use a throwaway one)
#   IMAGE_SAVE_DIR  also save each image as a docker-archive NAME.tar in this directory
#   CA_BUNDLE       CA certificates to install (default /etc/ssl/certs/ca-certificates.crt)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
NAMES=${IMAGE_NAMES:-dataplane controlplane gatewayctl}
PREFIX=${IMAGE_PREFIX:-sekgate/}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
REVISION=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
TAG=${IMAGE_TAG:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo dev)}
VERSION=${IMAGE_VERSION:-$TAG}

build_binaries() { # DIR
  for name in $NAMES; do
    (cd "$root" && CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=auto \
      -ldflags "-s -w -X github.com/sekgate/gateway/internal/version.linkedRevision=$REVISION" \
      -o "$1/$name" "./cmd/$name")
  done
}
if [ "${1:-}" = binaries ]; then
  [ -n "${2:-}" ] || { echo "usage: build.sh binaries DIR" >&2; exit 2; }
  mkdir -p "$2"
  build_binaries "$2"
  exit 0
fi

# docker counts only with a daemon to talk to; podman and buildah need none.
builder=${IMAGE_BUILDER:-}
if [ -z "$builder" ]; then
  for b in podman buildah docker; do
    command -v "$b" >/dev/null 2>&1 || continue
    if [ "$b" = docker ] && ! docker info >/dev/null 2>&1; then continue; fi
    builder=$b
    break
  done
fi
if [ -z "$builder" ]; then
  echo "images: no image builder found (install podman, buildah or docker)" >&2
  exit 1
fi
[ -r "$CA_BUNDLE" ] || { echo "images: CA bundle $CA_BUNDLE not readable (Debian: ca-certificates)" >&2; exit 1; }

storage=()
if [ -n "${IMAGE_STORAGE:-}" ] && [ "$builder" != docker ]; then
  storage=(--root "$IMAGE_STORAGE/root" --runroot "$IMAGE_STORAGE/run")
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/empty"
cp "$CA_BUNDLE" "$ctx/ca-certificates.crt"
cp "$here/passwd" "$here/group" "$ctx/"
if [ -n "${IMAGE_BIN_DIR:-}" ]; then
  for name in $NAMES; do cp "$IMAGE_BIN_DIR/$name" "$ctx/$name"; done
else
  build_binaries "$ctx"
fi

for name in $NAMES; do
  ref="$PREFIX$name:$TAG"
  args=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" -f "$here/$name.Containerfile" -t "$ref")
  case $builder in
    podman) podman "${storage[@]}" build -q "${args[@]}" "$ctx" >/dev/null ;;
    buildah) buildah "${storage[@]}" build -q "${args[@]}" "$ctx" >/dev/null ;;
    docker) docker build -q "${args[@]}" "$ctx" >/dev/null ;;
    *) echo "images: unknown builder $builder" >&2; exit 1 ;;
  esac
  echo "built $ref with $builder"
  if [ -n "${IMAGE_SAVE_DIR:-}" ]; then
    case $builder in
      podman) podman "${storage[@]}" save -q --format docker-archive -o "$IMAGE_SAVE_DIR/$name.tar" "$ref" ;;
      buildah) buildah "${storage[@]}" push -q "$ref" "docker-archive:$IMAGE_SAVE_DIR/$name.tar:$ref" ;;
      docker) docker save -o "$IMAGE_SAVE_DIR/$name.tar" "$ref" ;;
    esac
  fi
done
