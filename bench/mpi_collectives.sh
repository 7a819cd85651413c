#!/usr/bin/env bash
# MPI_Allreduce, MPI_Alltoall and MPI_Bcast (bench/mpi_collectives.c, OSU
# style) on this host, at 2 and 4 ranks, each in one run of three: Open MPI
# over its own TCP path (--mca pml ob1 --mca btl tcp,self), then Open MPI's
# UCX pml over uroce (rc_verbs, each rank on its own device) on the wire and
# through the intra-host path. The three take turns REPEATS times (default
# 3), and each size's figure is the median of its runs: on a shared VM one
# run of the same program can take three times as long as the next. Prints a
# markdown table per operation and rank count: the median of the average us
# per call of each, and uroce's speed-up over TCP (TCP's time / uroce's).
# Needs openmpi-bin and libopenmpi-dev (scripts/install-deps.sh).
#
#   bench/mpi_collectives.sh [max-bytes [min-bytes]]   # defaults 16 MiB, 1 KiB; about 5 minutes
#   OPERATIONS="allreduce" RANK_COUNTS="4" REPEATS=5 bench/mpi_collectives.sh   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
PROGRAM=build/release/bench/mpi_collectives
MAX=${1:-$((16 << 20))}
MIN=${2:-1024}
OPERATIONS=${OPERATIONS:-allreduce alltoall bcast}
RANK_COUNTS=${RANK_COUNTS:-2 4}
REPEATS=${REPEATS:-3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[[ -x $PROGRAM ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
UCX_ON_UROCE=(--mca pml ucx --mca btl ^vader,tcp,openib,uct -x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1)

for ranks in $RANK_COUNTS; do
  MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
  for operation in $OPERATIONS; do
    ARGS=("$operation" "$MAX" "$MIN")
    for run in $(seq "$REPEATS"); do
      "${MPIRUN[@]}" --mca pml ob1 --mca btl tcp,self "$PROGRAM" "${ARGS[@]}" >"$OUT/tcp.$run"
      "${MPIRUN[@]}" "${UCX_ON_UROCE[@]}" "$UROCE" run --wire --address-per-rank 127.0.3.40 -- "$PROGRAM" "${ARGS[@]}" >"$OUT/wire.$run"
      "${MPIRUN[@]}" "${UCX_ON_UROCE[@]}" "$UROCE" run --address-per-rank 127.0.3.50 -- "$PROGRAM" "${ARGS[@]}" >"$OUT/local.$run"
    done
    echo
    echo "MPI_${operation^}, $ranks ranks on $(nproc) cores, median of $REPEATS runs of the average us per call:"
    echo
    echo "| bytes | TCP (ob1) | uroce wire | wire / TCP | uroce intra-host | intra-host / TCP |"
    echo "|---:|---:|---:|---:|---:|---:|"
    # Columns of each file: bytes, avg us, min us, max us, busbw MB/s; the same sizes in the same order.
    for path in tcp wire local; do
      paste $(for run in $(seq "$REPEATS"); do echo "$OUT/$path.$run"; done) | grep -v '^#' |
        awk '{ n = 0
               for (i = 2; i <= NF; i += 5) {  # insertion sort of the runs (mawk has no asort)
                 x = $i; j = ++n
                 while (j > 1 && v[j - 1] > x) { v[j] = v[j - 1]; --j }
                 v[j] = x
               }
               print $1, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }' >"$OUT/$path"
    done
    paste "$OUT/tcp" "$OUT/wire" "$OUT/local" |
      awk '{ printf "| %s | %.2f | %.2f | %.2fx | %.2f | %.2fx |\n", $1, $2, $4, $2 / $4, $6, $2 / $6 }'
  done
done
