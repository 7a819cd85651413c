#!/usr/bin/env bash
# MPI_Allreduce (bench/mpi_allreduce.c, OSU style, 8 B to 64 MiB) with
# `mpirun -np 4` on this host, in one run: Open MPI over its own TCP path
# (--mca pml ob1 --mca btl tcp,self), then Open MPI's UCX pml over uroce
# (rc_verbs, each rank on its own device) on the wire and through the
# intra-host path. Prints one markdown table: average us per call and bus
# bandwidth for each. Needs openmpi-bin and libopenmpi-dev
# (scripts/install-deps.sh).
#
#   bench/mpi_allreduce.sh [max-bytes]     # about a minute on two cores
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
PROGRAM=build/release/bench/mpi_allreduce
MAX=${1:-$((64 << 20))}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[[ -x $PROGRAM ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
RANKS=${RANKS:-4}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$RANKS")
UCX_ON_UROCE=(--mca pml ucx --mca btl ^vader,tcp,openib,uct -x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1)

"${MPIRUN[@]}" --mca pml ob1 --mca btl tcp,self "$PROGRAM" "$MAX" >"$OUT/tcp"
"${MPIRUN[@]}" "${UCX_ON_UROCE[@]}" "$UROCE" run --wire --address-per-rank 127.0.3.40 -- "$PROGRAM" "$MAX" >"$OUT/wire"
"${MPIRUN[@]}" "${UCX_ON_UROCE[@]}" "$UROCE" run --address-per-rank 127.0.3.50 -- "$PROGRAM" "$MAX" >"$OUT/local"

echo "| bytes | TCP (ob1) us | TCP MB/s | uroce wire us | wire MB/s | uroce intra-host us | intra-host MB/s |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
# Columns of each file: bytes, avg us, min us, max us, busbw MB/s; the same sizes in the same order.
paste <(grep -v '^#' "$OUT/tcp") <(grep -v '^#' "$OUT/wire") <(grep -v '^#' "$OUT/local") |
  awk '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $5, $7, $10, $12, $15 }'
