# syntax=docker/dockerfile:1
#
# usher's container image: a static binary on distroless, as a non-root
# user. Its stages are parsed and checked by cmd/usher/deploy_docker_test.go,
# and the binary is built there with the same flags. Build it with
#
#   make image                                   # podman, buildah or docker
#   make image IMAGE_PLATFORMS=linux/amd64,linux/arm64 PUSH=1
#
# which stamps the version of scripts/version.sh, or by hand:
#
#   docker build -t usher \
#     --build-arg VERSION=$(./scripts/version.sh) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# The release workflow (.github/workflows/release.yml) publishes it as
# ghcr.io/usherhq/usher:<tag> for linux/amd64 and linux/arm64. Base images
# are named in full (docker.io/..., gcr.io/...) so that podman, which has
# no default registry, finds them.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM docker.io/library/golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath \
      -ldflags "-s -w -X main.Version=${VERSION} -X main.Commit=${COMMIT} -X main.Date=${DATE}" \
      -o /out/usher ./cmd/usher \
 && mkdir -p /out/data

# distroless/static has CA certificates (https origins, Redis over TLS),
# time zones and a nonroot user (65532), and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/usher /usher
COPY LICENSE /usr/share/doc/usher/LICENSE
# The embedded store's directory, owned by the user usher runs as.
COPY --from=build --chown=65532:65532 /out/data /data
COPY deploy/docker/usher.yaml /etc/usher/usher.yaml
USER 65532:65532
VOLUME ["/data"]
# 8080: the public listener; 9090: the admin listener (publish it privately).
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usher", "health", "--url", "http://127.0.0.1:9090/healthz"]
ENTRYPOINT ["/usher"]
CMD ["serve", "--config", "/etc/usher/usher.yaml"]
