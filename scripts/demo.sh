#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job: two uroce processes over loopback (a server on 127.0.0.2, a client on
# 127.0.0.3) doing RDMA WRITE, READ, SEND and atomics with every byte checked,
# then perftest's bandwidth and latency tables, unmodified perftest on the
# libibverbs (through shared memory, with shared regions, then on the
# wire), rdma-core's own tests of memory windows, XRC, extended CQs and
# on-demand paging, a decode of the
# public RoCEv2 sample capture, forged packets and a killed peer, rdma_cm
# programs, UCX, Open MPI and libfabric unchanged; last, the
# fabric simulator on the parking lot, a link failure, collectives, trimming
# in an incast, and its DCQCN against HPCC's ns-3.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/build.sh release --quiet
uroce=build/release/tools/uroce
port=18600

# Runs one `uroce perf` test as a server process and a client process.
pair() {
  local test=$1
  shift
  "$uroce" perf "$test" --bind 127.0.0.2 -p $port --timeout 30 "$@" >/dev/null &
  local server=$!
  "$uroce" perf "$test" --bind 127.0.0.3 -p $port --timeout 30 "$@" 127.0.0.2
  wait $server
  port=$((port + 1))
}

echo "== Two processes, verified: WRITE, READ, SEND, FETCH_AND_ADD"
pair write_bw -s 100000 -n 200 --verify | grep -E "^ 100000|verified"
pair read_bw -s 100000 -n 200 --verify | grep -E "^ 100000|verified"
pair send_bw -s 5000 -n 1000 --verify | grep -E "^ 5000|verified"
pair atomic_bw -n 1000 --verify | grep -E "^ 8 |verified"
echo
echo "== uroce perf write_bw -a (2 B .. 8 MiB)"
pair write_bw -a -n 500
echo
echo "== uroce perf write_lat -a"
pair write_lat -a -n 200
echo
echo "== uroce perf read_lat"
pair read_lat -n 1000
echo
echo "== Unmodified rdma-core and perftest programs on uroce's libibverbs (uroce run)"
# GID 0 (the link-local GID, as most people run the pingpongs on RoCE)
"$uroce" run --address 127.0.0.2 -- ibv_rc_pingpong -p $port -g 0 -c >/dev/null &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- ibv_rc_pingpong -p $port -g 0 -c 127.0.0.1 | tail -n 1
wait $server
port=$((port + 1))
"$uroce" run --address 127.0.0.2 -- ib_write_bw -p $port >/dev/null &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- ib_write_bw -p $port 127.0.0.1 | grep -A1 "#bytes"
wait $server
port=$((port + 1))
# Two local devices meet through shared memory by default (the intra-host
# path); UROCE_WIRE=1 puts every datagram on loopback UDP.
for wire in 0 1; do
  if [[ $wire == 0 ]]; then
    echo "-- ib_write_lat between two local devices: the intra-host path (shared memory, the default), with the client's counters"
  else
    echo "-- the same on the wire (UROCE_WIRE=1: loopback UDP), through the progress engine (UROCE_PROGRESS=adaptive)"
  fi
  port=$((port + 1))
  UROCE_WIRE=$wire "$uroce" run --address 127.0.0.2 -- ib_write_lat -p $port -n 5000 >/dev/null &
  server=$!
  sleep 1
  UROCE_WIRE=$wire UROCE_STATS=1 "$uroce" run --address 127.0.0.3 -- ib_write_lat -p $port -n 5000 127.0.0.1 2>&1 |
    grep -E "#bytes|^ 2 |uroce:" | sed 's/; /\n    /g'
  wait $server
done
echo "-- ib_write_bw, 64 KiB, with shared regions (uroce run --shared-mr): each WRITE one packet naming its bytes, one copy"
for shared in "" --shared-mr; do
  port=$((port + 1))
  "$uroce" run $shared --address 127.0.0.2 -- ib_write_bw -p $port -n 20000 >/dev/null &
  server=$!
  sleep 1
  echo "   uroce run ${shared:-(datagrams)}:"
  "$uroce" run $shared --address 127.0.0.3 -- ib_write_bw -p $port -n 20000 127.0.0.1 2>&1 |
    grep -A1 "#bytes" | tail -n 1
  wait $server
done
echo "== rdma-core's own tests (pyverbs): memory windows, XRC, extended CQs, on-demand paging, rereg and resize, rdma_cm (two processes on one address)"
./scripts/rdma-core-tests.sh tests.test_mr.MWTest.test_mw_type2_invalidate_remote tests.test_mr.MWTest.test_mw_type1 \
  tests.test_qpex.QpExTestCase.test_qp_ex_xrc_send tests.test_cqex.CqExTestCase.test_rc_traffic_cq_ex \
  tests.test_odp.OdpTestCase.test_odp_implicit_rc_traffic tests.test_mr.MRTest.test_mr_rereg_pd \
  tests.test_cq.CQTest.test_resize_cq tests.test_rdmacm.CMTestCase.test_rdmacm_async_traffic \
  tests.test_rdmacm.CMTestCase.test_rdmacm_async_multicast_traffic | tail -n 11
echo "-- Two processes on one device address, as processes share a NIC: ibv_rc_pingpong -g 0, server and client on 127.0.0.4"
port=$((port + 1))
"$uroce" run --address 127.0.0.4 -- ibv_rc_pingpong -g 0 -c -p $port -n 1000 > /dev/null 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.4 -- ibv_rc_pingpong -g 0 -c -p $port -n 1000 127.0.0.4 2>&1 | sed 's/^/  client: /'
wait $server
echo "== Unmodified rping -v over uroce's librdmacm: the connection manager on QP 1 (REQ, REP, RTU ... DREQ, DREP)"
rping_server_log=$(mktemp)
"$uroce" run --address 127.0.0.2 -- rping -s -a 127.0.0.2 -p 7174 -v -C 3 > "$rping_server_log" 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- rping -c -a 127.0.0.2 -p 7174 -v -C 3 2>&1 | sed 's/^/  client: /'
wait $server
sed 's/^/  server: /' "$rping_server_log"
rm -f "$rping_server_log"
echo "-- Unmodified udaddy: a UD service found by SIDR (SIDR_REQ, SIDR_REP), then datagrams each way"
"$uroce" run --address 127.0.0.2 -- udaddy > "$rping_server_log" 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- udaddy -s 127.0.0.2 2>&1 | sed 's/^/  client: /'
wait $server
sed 's/^/  server: /' "$rping_server_log"
echo "-- Unmodified mckey: UD multicast through rdma_join_multicast (a receiver joins 239.0.0.2, then a sender sends 10 datagrams to the group)"
"$uroce" run --address 127.0.0.2 -- mckey -m 239.0.0.2 -b 127.0.0.2 -C 10 > "$rping_server_log" 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- mckey -m 239.0.0.2 -b 127.0.0.3 -s -C 10 2>&1 | sed 's/^/  sender: /'
wait $server
sed 's/^/  receiver: /' "$rping_server_log"
echo "-- Unmodified rstream -T v: rsockets (rdma-core's protocol), every byte verified"
"$uroce" run --address 127.0.0.2 -- rstream -p 7190 -T v > "$rping_server_log" 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- rstream -s 127.0.0.2 -p 7190 -T v > "$rping_server_log.client" 2>&1
sed -n '1,6s/^/  client: /p' "$rping_server_log.client"
rm -f "$rping_server_log.client"
wait $server || true
echo "-- Unmodified ib_write_bw -R: perftest's exchange and QPs through rdma_cm"
"$uroce" run --address 127.0.0.2 -- ib_write_bw -R -d uroce0 -p 18690 -n 2000 > "$rping_server_log" 2>&1 &
server=$!
sleep 0.5
"$uroce" run --address 127.0.0.3 -- ib_write_bw -R -d uroce0 -p 18690 -n 2000 127.0.0.2 > "$rping_server_log.client" 2>&1
tail -3 "$rping_server_log.client" | sed 's/^/  client: /'
rm -f "$rping_server_log.client"
wait $server || true
rm -f "$rping_server_log"
echo "== UCX, unchanged: ucx_info sees uroce0 (through the sysfs view uroce run preloads); ucx_perftest tag_bw over rc_verbs"
"$uroce" run --address 127.0.0.2 -- ucx_info -d | grep -E "Memory domain: uroce0|Transport: (rc|ud)_verbs" | sed 's/^#/ /'
export UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=uroce0:1
"$uroce" run --address 127.0.0.2 -- ucx_perftest -p 13390 > /dev/null 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- ucx_perftest -p 13390 127.0.0.1 -t tag_bw -s 65536 -n 5000 2>&1 | grep -E "Stage|Final" | sed 's/^/  /'
wait $server
echo "== Open MPI over UCX, unchanged: mpirun -np 4, a uroce device a rank; every Allreduce, Alltoall and Bcast element checked"
UROCE_STATS=1 mpirun --allow-run-as-root --oversubscribe -np 4 --mca pml ucx --mca btl ^vader,tcp,openib,uct \
  -x UCX_TLS -x UCX_NET_DEVICES -x UROCE_STATS \
  "$uroce" run --address-per-rank 127.0.0.40 -- build/release/tests/collectives_check 2>&1 |
  sed -E 's/; receiving rounds.*//; s/^/  /'
unset UCX_TLS UCX_NET_DEVICES
echo "== libfabric, unchanged: fi_pingpong with data checks, RDM endpoints (verbs;ofi_rxm, connected by rdma_cm)"
"$uroce" run --address 127.0.0.2 -- fi_pingpong -p "verbs;ofi_rxm" -e rdm -c -I 200 -B 47590 > /dev/null 2>&1 &
server=$!
sleep 1
"$uroce" run --address 127.0.0.3 -- fi_pingpong -p "verbs;ofi_rxm" -e rdm -c -I 200 -P 47590 127.0.0.2 2>&1 | sed 's/^/  /'
wait $server
echo "-- uroce decode names the kernel's rdma_cm MADs (tests/vectors/kernel-cm.pcap)"
"$uroce" decode tests/vectors/kernel-cm.pcap | sed 's/.*| //' 
echo
capture=tests/vectors/roce-public.pcap
echo "== uroce decode $capture (first 5 frames)"
build/release/tools/uroce decode "$capture" | sed -n 1,5p  # sed reads it all: head would end decode with SIGPIPE
echo
echo "== Hostile input: a WRITE, a NAK and CNPs forged from a third address, and a peer killed mid-transfer"
build/release/tests/uroce_unit_tests --gtest_filter='*Forged*' | grep -E '^\[  (PASSED|FAILED)'
# In a namespace and a /dev/shm of its own, as ctest runs it: the killed
# peer's intra-host inbox goes with them instead of staying in the host's.
tests/support/isolated.sh build/release/tests/uroce_peer_kill_tests | grep 'retry budget'
echo
echo "== Fabric simulator: replay a training step from Chakra traces, data parallel then mixture of experts (examples/chakra_*.toml)"
sim_out=$(mktemp -d)
"$uroce" sim run examples/chakra_data_parallel.toml --out "$sim_out/dp" --quiet | grep -E "^chakra replay|wrote"
"$uroce" sim run examples/chakra_mixture_of_experts.toml --out "$sim_out/moe" --quiet | grep -E "^chakra replay"
python3 - "$sim_out/dp/summary.json" <<'PY'
import json, sys
chakra = json.load(open(sys.argv[1]))["chakra"]
for c in chakra["collectives"]:
    print(f"  {c['operation']} #{c['index']}: {c['bytes'] >> 20} MiB from {c['start_us']:.0f} to {c['end_us']:.0f} us, "
          f"busbw {c['busbw_gb_per_s']:.2f} GB/s")
PY
echo "  Two such jobs on a leaf-spine oversubscribed 2:1 (examples/chakra_two_jobs.toml), then job a alone:"
"$uroce" sim run examples/chakra_two_jobs.toml --out "$sim_out/two" --quiet | grep -E "^chakra replay"
sed -e '0,/^\[\[chakra\]\]/b; /^\[\[chakra\]\]/,$d' -e "s|^traces = \"|traces = \"$PWD/examples/|" \
  examples/chakra_two_jobs.toml > "$sim_out/one.toml"
"$uroce" sim run "$sim_out/one.toml" --out "$sim_out/one" --quiet | grep -E "^chakra replay"
echo "  (timeline.json opens in ui.perfetto.dev; ASTRA-sim's own example traces replay too:)"
sed "s|^traces = .*|traces = \"$PWD/tests/sim/astra_sim_traces/all_to_all/8npus_1MB/all_to_all\"|" \
  examples/chakra_data_parallel.toml > "$sim_out/astra.toml"
"$uroce" sim run "$sim_out/astra.toml" --out "$sim_out/astra" --quiet | grep -E "^chakra replay"
echo
echo "== NCCL on GPU servers (examples/nccl_gpu_servers.toml: 4 x 8 GPUs, NVLink, 400 Gb/s rails): all-reduce, 1 MiB then 128 MiB, algorithm by predicted time"
"$uroce" sim run examples/nccl_gpu_servers.toml --out "$sim_out/nccl" --quiet | grep -E "^all_reduce"
sed 's/^bytes = 1048576/bytes = 134217728/' examples/nccl_gpu_servers.toml > "$sim_out/nccl_large.toml"
"$uroce" sim run "$sim_out/nccl_large.toml" --out "$sim_out/nccl_large" --quiet | grep -E "^all_reduce"
echo
echo "== The parking lot (examples/parking_lot.toml), ConnectX DCQCN, then PFC alone"
"$uroce" sim run examples/parking_lot.toml --out "$sim_out/dcqcn" --quiet | grep -E "flows:|pause frames|fairness"
sed 's/^enabled = true/enabled = false/' examples/parking_lot.toml > "$sim_out/pfc.toml"
"$uroce" sim run "$sim_out/pfc.toml" --out "$sim_out/pfc" --quiet | grep -E "flows:|pause frames|fairness"
echo
echo "== A leaf-spine link fails at 100 us (examples/link_failure.toml): routes converge after 500 us, then 3 ms"
"$uroce" sim run examples/link_failure.toml --out "$sim_out/failure" --quiet | grep -E "flows:|lost to failed"
sed 's/^reconverge_us = 500/reconverge_us = 3000/' examples/link_failure.toml > "$sim_out/slow.toml"
"$uroce" sim run "$sim_out/slow.toml" --out "$sim_out/slow" --quiet | grep -E "flows:"
echo
# sim_variant NAME SED-SCRIPT EXAMPLE PATTERN: runs the example edited by
# SED-SCRIPT (empty: as it is) and shows its lines that match PATTERN.
sim_variant() {
  sed "$2" "examples/$3" > "$sim_out/$1.toml"
  "$uroce" sim run "$sim_out/$1.toml" --out "$sim_out/$1" --quiet | grep -E "$4"
}
echo "== Collectives on a leaf-spine (examples/collectives.toml): halving-doubling all-reduce under ECMP, then sprayed; a ring"
sim_variant hd '' collectives.toml 'ranks\)'
sim_variant spray 's/^pfc = true/pfc = true\nforwarding = "spray"/' collectives.toml 'ranks\)'
sim_variant ring 's/^algorithm = "halving_doubling"/algorithm = "ring"/' collectives.toml 'ranks\)'
echo
echo "== A 16-to-1 incast (examples/incast_trimming.toml): the switch trims, then plain drop, then PFC"
sim_variant trim '' incast_trimming.toml 'flows:|trimmed'
sim_variant drop '/^trim = true/d' incast_trimming.toml 'flows:'
sim_variant lossless '/^trim = true/d; s/^pfc = false/pfc = true\nxoff_kb = 256\ndynamic_alpha = 0/' incast_trimming.toml 'flows:'
echo
echo "== A link fails during a ring all-reduce (iterations 2.6 ms): single-path QPs under ECMP, then MRC-style multipath QPs"
sim_variant ecmp '' allreduce_link_failure.toml 'ranks\)'
sim_variant mrc '' allreduce_link_failure_mrc.toml 'ranks\)|multipath:'
echo
echo "== A permutation on a k=8 fat-tree (examples/permutation_spraying.toml): ECMP, then multipath EVs, then source-routed EVs"
sim_variant perm_ecmp '' permutation_spraying.toml 'flows:'
sim_variant perm_mrc 's/^mtu = 4096/mtu = 4096\nrecovery = "selective_repeat"\nmultipath_evs = 128/' permutation_spraying.toml 'flows:'
sim_variant perm_source 's/^pfc = true/pfc = true\nforwarding = "source"/; s/^mtu = 4096/mtu = 4096\nrecovery = "selective_repeat"\nmultipath_evs = 128/' permutation_spraying.toml 'flows:'
echo
echo "== The ECMP permutation again, on 2 threads (--threads 2, two partitions of the fabric): the same results bit for bit"
"$uroce" sim run examples/permutation_spraying.toml --out "$sim_out/perm_threads" --threads 2 --quiet | grep -E "flows:"
python3 - "$sim_out/perm_ecmp/summary.json" "$sim_out/perm_threads/summary.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
wall = one.pop("wall_s"), two.pop("wall_s")
print(f"summary.json identical but for wall_s: {one == two} (1 thread {wall[0]:.3f} s, 2 threads {wall[1]:.3f} s)")
sys.exit(0 if one == two else 1)
PY
echo
if command -v mpirun > /dev/null; then
  echo "== The same on 2 MPI ranks (mpirun -np 2 uroce sim run): the same results, but wall_s and ranks"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    mpirun --oversubscribe -np 2 "$uroce" sim run examples/permutation_spraying.toml --out "$sim_out/perm_ranks" \
    --quiet | grep -E "flows:|wall"
  python3 - "$sim_out/perm_ecmp/summary.json" "$sim_out/perm_ranks/summary.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
for key in ("wall_s", "ranks"):
    one.pop(key), two.pop(key)
print(f"summary.json identical but for wall_s and ranks: {one == two}")
sys.exit(0 if one == two else 1)
PY
  echo
fi
echo "== DCQCN against HPCC's ns-3 (ten runs of the peer, stored): slowdown by finishing rank"
build/release/tests/uroce_sim_tests --gtest_filter='HpccDcqcnValidation.ConnectxDefaults*' | grep -E '^\||toml'
rm -rf "$sim_out"
