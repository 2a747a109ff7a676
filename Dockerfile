# syntax=docker/dockerfile:1
# Multi-stage build of a static, non-root reflux image. The go build flags
# match `make build` exactly; keep them in step.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS builder
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY kustomize/ kustomize/
COPY reverse/ reverse/
RUN go build -trimpath -ldflags "-s -w" -o /reflux .

# git is not needed at run time: reflux talks to git servers through go-git.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /reflux /usr/local/bin/reflux
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/reflux"]
CMD ["manager"]
