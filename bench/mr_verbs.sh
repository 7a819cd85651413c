#!/usr/bin/env bash
# What ibv_rereg_mr and ibv_resize_cq cost on uroce's libibverbs against a
# plain ibv_reg_mr + ibv_dereg_mr of the same region, in one run
# (bench/mr_verbs.c). Both intra-host defaults and UROCE_SHARED_MR=1, where a
# registration moves whole pages onto a shared file.
#
#   bench/mr_verbs.sh [ITERATIONS] [BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
[[ -x $UROCE && -x build/release/bench/mr_verbs ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
echo "== default"
$UROCE run --address 127.0.3.20 -- build/release/bench/mr_verbs "$@"
echo "== UROCE_SHARED_MR=1"
$UROCE run --shared-mr --address 127.0.3.21 -- build/release/bench/mr_verbs "$@"
