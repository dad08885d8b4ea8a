# zkgroup container image: a static binary on distroless, non-root.
#   docker build -t zkgroup --build-arg VERSION=$(git describe --always) .
#   docker run --rm -v $PWD/zkgroup.yaml:/etc/zkgroup/zkgroup.yaml:ro \
#     -e ZKGROUP_ZOOKEEPER=zk:2181/kafka -p 9090:9090 zkgroup
# The build stage runs scripts/build-image.sh, which CI also runs without
# Docker: both build the binary the same way.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Dependencies first, for the layer cache.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN VERSION=${VERSION} ./scripts/build-image.sh /out

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/zkgroup /usr/local/bin/zkgroup
COPY configs/zkgroup.yaml /etc/zkgroup/zkgroup.yaml
# The admin server must listen beyond loopback inside a container.
ENV ZKGROUP_CONFIG=/etc/zkgroup/zkgroup.yaml \
    ZKGROUP_ADMIN_LISTEN=0.0.0.0:9090 \
    ZKGROUP_LOG_FORMAT=json
USER 65532:65532
EXPOSE 9090
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/zkgroup", "healthcheck", "--url", "http://127.0.0.1:9090/healthz"]
ENTRYPOINT ["/usr/local/bin/zkgroup"]
CMD ["run"]
