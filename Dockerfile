# Multi-stage build of the static mpiguard binary onto a distroless nonroot base:
# no shell, no package manager, runs as UID 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces cyclonus with this copy (third_party/cyclonus/README.mpiguard.md).
COPY third_party/ third_party/
RUN go mod download
COPY cmd/ cmd/
COPY webhooks/ webhooks/
COPY policies/ policies/
COPY runtimes/ runtimes/
COPY networkpolicies/ networkpolicies/
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/mpiguard ./cmd/mpiguard

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/mpiguard /mpiguard
USER 65532:65532
ENTRYPOINT ["/mpiguard"]
CMD ["serve"]
