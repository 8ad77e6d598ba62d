# Steward's image for those with Docker (make docker-build). `make image`
# writes the same layout without Docker: the operator's static binary at
# /steward as the entrypoint with no command, steward-agent (what the pods
# run) at /steward-agent, user 65532, CA certificates and time zones from
# distroless static. See docs/operating.md, "The image".

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/steward ./cmd/steward && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/steward-agent ./cmd/steward-agent

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/steward /steward
COPY --from=build /out/steward-agent /steward-agent
USER 65532:65532
ENTRYPOINT ["/steward"]
