#!/bin/sh
# build-image.sh: the build stage of the Dockerfile, runnable without
# Docker. The Dockerfile's build stage runs this very script, so the binary
# built here is built exactly as in the image: a static linux binary
# (CGO_ENABLED=0), trimmed paths, stripped, version stamped.
#
#   scripts/build-image.sh [OUTDIR]     (default: bin/)
#   VERSION=1.2.3 scripts/build-image.sh /out
#
# It checks that the result has no ELF interpreter (no dynamic loader) and
# prints its path.
set -eu

cd "$(dirname "$0")/.."
OUTDIR=${1:-bin}
GOOS=${GOOS:-linux}
GOARCH=${GOARCH:-$(go env GOARCH)}
if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)

echo "build-image: go build zkgroup ${VERSION} for ${GOOS}/${GOARCH} -> ${OUTDIR}/zkgroup"
# The daemon's own module, as released: its go.mod and go.sum alone (not
# the workspace's), the library through its replace.
CGO_ENABLED=0 GOOS="$GOOS" GOARCH="$GOARCH" GOWORK=off \
	go build -C cmd/zkgroup -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=${VERSION}" \
	-o "$OUTDIR/zkgroup" .

# A static binary has no PT_INTERP program header.
if command -v file >/dev/null 2>&1; then
	desc=$(file -b "$OUTDIR/zkgroup")
	case "$desc" in
	*"dynamically linked"* | *interpreter*)
		echo "build-image: $OUTDIR/zkgroup is not static: $desc" >&2
		exit 1
		;;
	esac
	echo "build-image: $desc"
fi
echo "$OUTDIR/zkgroup"
