#!/usr/bin/env bash
# Runs the example scenarios of docs/simulator/examples.md, each as
# shipped and with the one setting it is about changed, and prints each run's
# summary: the figures that page quotes come from this script.
# Usage: scripts/sim-examples.sh [--build DIR] [--out DIR]
set -euo pipefail

cd "$(dirname "$0")/.."
build=build/release
out=$(mktemp -d)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
uroce="$build/tools/uroce"
mkdir -p "$out"
[[ -x "$uroce" ]] || { echo "$uroce is missing: build first (scripts/test.sh builds it)" >&2; exit 1; }

# run NAME FILE [SED-EXPRESSION]: the example, changed by the sed expression.
run() {
  local name="$1" file="examples/$2" change="${3:-}"
  local scenario="$out/$name.toml"
  # A Chakra example's relative trace path is from examples/, not from $out.
  local traces="s|^traces = \"\([^/]\)|traces = \"$PWD/examples/\1|"
  if [[ -n "$change" ]]; then sed -e "$change" -e "$traces" "$file" > "$scenario"; else sed -e "$traces" "$file" > "$scenario"; fi
  echo "== $name ($2${change:+, $change})"
  "$uroce" sim run "$scenario" --out "$out/$name" --quiet | grep -v '^wrote'
  echo
}

paper='s/^enabled = true/enabled = true\nvariant = "paper"/'
run parking-lot-dcqcn parking_lot.toml
run parking-lot-dcqcn-paper parking_lot.toml "$paper"
run parking-lot-pfc parking_lot.toml 's/^enabled = true/enabled = false/'
run victim-dcqcn victim_flow.toml
run victim-dcqcn-paper victim_flow.toml "$paper"
run victim-pfc victim_flow.toml 's/^enabled = true/enabled = false/'
run deadlock pfc_deadlock.toml
run incast-dcqcn incast.toml
run incast-dcqcn-paper incast.toml "$paper"
run incast-pfc incast.toml 's/^enabled = true/enabled = false/'
run lossy-selective-repeat lossy_recovery.toml
run lossy-go-back-n lossy_recovery.toml 's/recovery = "selective_repeat"/recovery = "go_back_n"/'
run lossy-selective-repeat-no-tail lossy_recovery.toml 's/^tail_timeout_us = 100/tail_timeout_us = 0/'
run lossy-selective-repeat-ack-every-packet lossy_recovery.toml 's/^recovery = "selective_repeat"/recovery = "selective_repeat"\nack_every_packet = true/'
run allreduce-straggler allreduce_straggler.toml
run allreduce-even allreduce_straggler.toml '/^straggler/d'
run link-failure link_failure.toml
run link-failure-slow-reconvergence link_failure.toml 's/^reconverge_us = 500/reconverge_us = 3000/'
run link-failure-none link_failure.toml '/^\[\[failures\]\]/,/^at_us/d'
run allreduce-link-failure allreduce_link_failure.toml
run allreduce-link-failure-slow allreduce_link_failure.toml 's/^reconverge_us = 2000/reconverge_us = 5000/'
run allreduce-link-failure-too-slow allreduce_link_failure.toml 's/^reconverge_us = 2000/reconverge_us = 20000/'
run allreduce-link-failure-mrc allreduce_link_failure_mrc.toml
run allreduce-8-planes allreduce_8_planes.toml
run allreduce-8-planes-one-plane-per-qp allreduce_8_planes.toml '/^multipath_evs/d'
run allreduce-3-tier allreduce_3_tier.toml
run permutation-ecmp permutation_spraying.toml
run permutation-switch-spray permutation_spraying.toml 's/^pfc = true/pfc = true\nforwarding = "spray"/; s/^mtu = 4096/mtu = 4096\nrecovery = "selective_repeat"/'
run permutation-multipath permutation_spraying.toml 's/^mtu = 4096/mtu = 4096\nrecovery = "selective_repeat"\nmultipath_evs = 128/'
run permutation-multipath-source-routed permutation_spraying.toml 's/^pfc = true/pfc = true\nforwarding = "source"/; s/^mtu = 4096/mtu = 4096\nrecovery = "selective_repeat"\nmultipath_evs = 128/'
run allreduce-link-failure-mrc-never-converges allreduce_link_failure_mrc.toml 's/^reconverge_us = 2000/reconverge_us = 1000000/'
run collectives-halving-doubling-ecmp collectives.toml
run collectives-halving-doubling-spray collectives.toml 's/^pfc = true/pfc = true\nforwarding = "spray"/'
run collectives-ring-ecmp collectives.toml 's/^algorithm = "halving_doubling"/algorithm = "ring"/'
run collectives-alltoall-ecmp collectives.toml 's/^operation = "all_reduce"/operation = "alltoall"/; s/^algorithm = "halving_doubling"/algorithm = "direct"/'
run collectives-alltoall-spray collectives.toml 's/^operation = "all_reduce"/operation = "alltoall"/; s/^algorithm = "halving_doubling"/algorithm = "direct"/; s/^pfc = true/pfc = true\nforwarding = "spray"/'
run incast-trimming incast_trimming.toml
run incast-plain-drop incast_trimming.toml '/^trim = true/d'
run incast-pfc-lossless incast_trimming.toml '/^trim = true/d; s/^pfc = false/pfc = true\nxoff_kb = 256\ndynamic_alpha = 0/'
run web-search web_search_load.toml
run chakra-data-parallel chakra_data_parallel.toml
run chakra-data-parallel-halving-doubling chakra_data_parallel.toml 's/^\[chakra\]/[chakra]\nalgorithm = "halving_doubling"/'
run chakra-mixture-of-experts chakra_mixture_of_experts.toml
run chakra-two-jobs chakra_two_jobs.toml
run chakra-two-jobs-8-channels chakra_two_jobs.toml 's/^\[\[chakra\]\]/[[chakra]]\nchannels = 8/'
run chakra-two-jobs-a-alone chakra_two_jobs.toml '0,/^\[\[chakra\]\]/b; /^\[\[chakra\]\]/,$d'
run chakra-mixture-of-experts-spray chakra_mixture_of_experts.toml 's/^pfc = true/pfc = true\nforwarding = "spray"/; s/^\[chakra\]/[transport]\nrecovery = "selective_repeat"\n\n[chakra]/'
echo "outputs in $out"
run nccl-1mib-auto nccl_gpu_servers.toml
run nccl-1mib-ring nccl_gpu_servers.toml 's/^algorithm = "auto"/algorithm = "ring"/'
run nccl-1mib-tree nccl_gpu_servers.toml 's/^algorithm = "auto"/algorithm = "double_binary_tree"/'
run nccl-128mib-auto nccl_gpu_servers.toml 's/^bytes = 1048576/bytes = 134217728/'
run nccl-128mib-ring nccl_gpu_servers.toml 's/^bytes = 1048576/bytes = 134217728/; s/^algorithm = "auto"/algorithm = "ring"/'
run nccl-128mib-tree nccl_gpu_servers.toml 's/^bytes = 1048576/bytes = 134217728/; s/^algorithm = "auto"/algorithm = "double_binary_tree"/'
run nccl-128mib-shared-nic nccl_gpu_servers.toml 's/^bytes = 1048576/bytes = 134217728/; s/^nic = "rail"/nic = "shared"/; s/^leaves = 8/leaves = 1/'
run nccl-alltoall-32mib nccl_gpu_servers.toml 's/^bytes = 1048576/bytes = 33554432/; s/^operation = "all_reduce"/operation = "alltoall"/'
