# zkgroup container image: a static binary on distroless, non-root.
#   docker build -t zkgroup --build-arg VERSION=$(git describe --always) .
#   docker run --rm -p 9779:9779 \
#     -e ZKGROUP_ZOOKEEPER=zk:2181/kafka -e ZKGROUP_GROUP=orders-archiver \
#     -e ZKGROUP_SUBSCRIPTION=static:orders zkgroup
#   (or a file: -v $PWD/zkgroup.yaml:/etc/zkgroup/zkgroup.yaml:ro
#    -e ZKGROUP_CONFIG=/etc/zkgroup/zkgroup.yaml)
# No configuration is baked in: a container given no group or subscription
# exits 2 saying so, instead of joining a group of the example config.
# The build stage runs scripts/build-image.sh, which CI also runs without
# Docker: both build the binary the same way. CI builds and runs a test
# image derived from this file's final stage (cmd/zkgroup/image_test.go):
# FROM scratch with the same binary, user, paths, environment, entrypoint
# and healthcheck.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Dependencies first, for the layer cache.
COPY go.mod go.sum ./
COPY cmd/zkgroup/go.mod cmd/zkgroup/go.sum ./cmd/zkgroup/
RUN cd cmd/zkgroup && GOWORK=off go mod download
COPY . .
ARG VERSION=dev
RUN VERSION=${VERSION} ./scripts/build-image.sh /out

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/zkgroup /usr/local/bin/zkgroup
# The admin server must listen beyond loopback inside a container; 9779,
# not Prometheus' own 9090. The healthcheck probes the port set here.
ENV ZKGROUP_ADMIN_LISTEN=0.0.0.0:9779 \
    ZKGROUP_LOG_FORMAT=json
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 9779
STOPSIGNAL SIGTERM
# Liveness only (/healthz): a slow ZooKeeper makes the member unready
# (/readyz), and restarting it would not help.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/zkgroup", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/zkgroup"]
CMD ["run"]
