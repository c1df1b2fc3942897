#!/bin/sh
# Builds and runs nt_bench_otlp_pbc.c (see its head comment): needs protoc-c and
# libprotobuf-c-dev (Debian protobuf-c-compiler, libprotobuf-c-dev). Usage: bench/otlp_pbc/run.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
protos="opentelemetry/proto/common/v1/common.proto opentelemetry/proto/resource/v1/resource.proto opentelemetry/proto/trace/v1/trace.proto"
protoc-c -I "$root/third_party/opentelemetry-proto" --c_out=. $protos
cc -O2 -I. -I"$root" -o bench "$root/bench/otlp_pbc/nt_bench_otlp_pbc.c" \
	opentelemetry/proto/common/v1/common.pb-c.c opentelemetry/proto/resource/v1/resource.pb-c.c \
	opentelemetry/proto/trace/v1/trace.pb-c.c -lprotobuf-c
./bench
