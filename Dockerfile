# syntax=docker/dockerfile:1
# ccmlab as a container, for running one lab per pod (see deploy/).
# Build: docker build -t ccmlab .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO off: etcd, the apiserver and SQLite (modernc) are pure Go, so the
# binary is static and runs on a distroless base.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ccmlab ./cmd/ccmlab

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ccmlab /usr/local/bin/ccmlab
# The lab's state (etcd, cloud, kubeconfig) lives in /home/nonroot/lab; mount a volume there to keep it.
WORKDIR /home/nonroot
USER nonroot:nonroot
EXPOSE 8080
# A non-loopback listen address requires a token (CCMLAB_TOKEN).
ENTRYPOINT ["/usr/local/bin/ccmlab", "serve", "--data-dir=/home/nonroot/lab", "--listen=0.0.0.0:8080"]
