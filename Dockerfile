# syntax=docker/dockerfile:1
#
# The manager's image, for those who build with Docker or BuildKit:
#
#   docker build --build-arg VERSION=v0.1.0 -t dbtune/scratch-operator:v0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.1.0 -t REGISTRY/scratch-operator:v0.1.0 --push .
#
# `make images` builds the same image (a static binary run as 65532:65532 on an empty base)
# without any container engine; see hack/images.

ARG GO_VERSION=1.26

# The compiler runs on the build machine's platform and cross-compiles, which is much faster than
# emulating the target.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOWORK=off \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/manager .

# distroless/static: no shell, no package manager, CA certificates and tzdata only, and the
# nonroot user 65532.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="scratch-operator" \
      org.opencontainers.image.description="dbtune scratch-operator: RAM-backed scratch volumes for MySQL and MariaDB StatefulSets" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/dbtune/scratch-operator" \
      org.opencontainers.image.vendor="dbtune"
COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
