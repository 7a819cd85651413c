#!/bin/bash
# Wire interop with the Linux kernel's Soft-RoCE (rdma_rxe). Boots Debian's
# kernel under qemu (software emulation) with a busybox initramfs that holds
# rdma-core's real tools, joins the guest to a tap device inside a network
# namespace made for the run, and runs unmodified ibv_rc_pingpong, ib_write_bw
# and ib_read_bw, a memory-window exchange (tests/interop/mw_exchange.c),
# then rping and udaddy over rdma_cm (the kernel's connection manager
# against uroce's librdmacm, MADs on QP 1) and rstream and riostream over
# rsockets (rdma-core's rsocket protocol against uroce's) and mckey (UD
# multicast through rdma_join_multicast), between the guest (kernel
# Soft-RoCE on eth0) and this host (uroce's libraries on the raw Ethernet
# port of the tap), in both directions. Kernel Soft-RoCE drops frames whose ICRC does not verify, and
# uroce's raw port checks every arriving ICRC over the real headers and counts
# failures (printed with UROCE_STATS=1): each exchange must end with exit 0
# on both sides and no ICRC error on uroce's side.
#
#   scripts/interop-softroce.sh [--quick] [--cm-only] [--build DIR] [--capture-cm FILE]
#
# UROCE_INTEROP_PCAP=FILE: qemu writes every frame of the guest's link to
# FILE (each frame after a 12-byte virtio-net header).
# --quick: fewer iterations (CI). --cm-only: only the rdma_cm exchanges
# (rping, udaddy, rstream and riostream each way), not the verbs ones. --capture-cm FILE: instead of the exchanges,
# the guest's kernel rdma_cm tries to connect to this host (rping, RC over
# RDMA_PS_TCP: REQ MADs; udaddy, RDMA_PS_UDP: SIDR_REQ MADs), nothing on this
# side answers, and the frames are written to FILE (needs tcpdump) as
# reference vectors of what Linux's connection manager sends. Needs root, qemu-system-x86 and
# busybox-static (scripts/install-deps.sh installs them) and the Debian
# kernel package, which it downloads once into build/interop.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
build="$here/build/release"
capture_cm=""
cm_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --build) build="$2"; shift ;;
    --capture-cm) capture_cm="$(realpath -m "$2")"; shift ;;
    --cm-only) cm_only=1 ;;
    *) echo "usage: $0 [--quick] [--cm-only] [--build DIR] [--capture-cm FILE]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "interop-softroce: needs root (namespaces, tap, raw sockets)" >&2; exit 2; }
[ -e "$build/lib/libibverbs.so.1" ] || { echo "interop-softroce: build uroce first (scripts/build.sh release)" >&2; exit 2; }
for tool in qemu-system-x86_64 busybox cpio ibv_rc_pingpong ib_write_bw ib_read_bw rdma rping; do
  command -v "$tool" > /dev/null || { echo "interop-softroce: $tool is missing (scripts/install-deps.sh)" >&2; exit 2; }
done

work="$here/build/interop"
mkdir -p "$work"
ns="uroce-interop-$$"
host_address=10.79.40.1
guest_address=10.79.40.2
if [ "$quick" = 1 ]; then bw_iterations=200; rping_count=10; rstream_count=20; mckey_count=10; else bw_iterations=1000; rping_count=100; rstream_count=200; mckey_count=100; fi

# --- The guest's kernel: Debian's, with rdma_rxe, downloaded once.
kernel_package="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')"
[ -n "$kernel_package" ] || { echo "interop-softroce: cannot find Debian's kernel package" >&2; exit 2; }
kernel_root="$work/$kernel_package"
if [ ! -d "$kernel_root/boot" ]; then
  (cd "$work" && apt-get download "$kernel_package" > /dev/null 2>&1) || { echo "interop-softroce: cannot download $kernel_package" >&2; exit 2; }
  dpkg -x "$work/${kernel_package}"_*.deb "$kernel_root"
fi
vmlinuz="$(ls "$kernel_root"/boot/vmlinuz-* | head -1)"
modules="$(ls -d "$kernel_root"/lib/modules/* | head -1)"

# --- The initramfs: busybox, the modules, rdma-core's tools with every
# library they load (the real libibverbs and its rxe provider), and /init.
rootfs="$work/rootfs"
rm -rf "$rootfs"
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc/libibverbs.d,lib/modules}
cp "$(command -v busybox)" "$rootfs/bin/busybox"
copy_with_libraries() {
  local file="$1"
  mkdir -p "$rootfs$(dirname "$file")"
  cp -L "$file" "$rootfs$file"
  ldd "$file" 2>/dev/null | grep -o '/[^ ]*' | while read -r library; do
    [ -e "$rootfs$library" ] && continue
    mkdir -p "$rootfs$(dirname "$library")"
    cp -L "$library" "$rootfs$library"
  done
}
for program in ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_bw rdma rping udaddy rstream riostream mckey; do
  copy_with_libraries "$(command -v "$program")"
done
# The memory-window exchange (tests/interop/mw_exchange.c): against the real
# libibverbs here, so that in the guest it runs on rxe and on the host,
# under `uroce run`, on uroce's.
cc -O2 -o "$work/mw_exchange" "$here/tests/interop/mw_exchange.c" -libverbs
copy_with_libraries "$work/mw_exchange"
copy_with_libraries /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
# glibc loads libgcc_s at run time for pthread_exit (rping's threads end so).
copy_with_libraries "$(gcc -print-file-name=libgcc_s.so.1 | xargs readlink -f)"
cp /etc/libibverbs.d/rxe.driver "$rootfs/etc/libibverbs.d/"
module_order="crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe virtio_ring virtio failover"
module_order="$module_order configfs ib_cm iw_cm rdma_cm rdma_ucm"  # the kernel's connection manager
if [ -n "$capture_cm" ]; then
  command -v tcpdump > /dev/null || { echo "interop-softroce: --capture-cm needs tcpdump" >&2; exit 2; }
fi
module_order="$module_order net_failover virtio_net virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci"
for module in $module_order; do
  found="$(find "$modules" -name "$module.ko" | head -1)"
  [ -n "$found" ] && cp "$found" "$rootfs/lib/modules/"
done

# The guest's half of each exchange, in the host's order. A guest server
# says LISTENING once its port is open; a guest client retries while the
# host's server is not listening yet.
cat > "$rootfs/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for module in $module_order; do [ -e /lib/modules/\$module.ko ] && insmod /lib/modules/\$module.ko; done
ip link set lo up; ip link set eth0 up; ip addr add $guest_address/24 dev eth0
ip route add 224.0.0.0/4 dev eth0  # multicast groups (mckey) leave by eth0
rdma link add rxe0 type rxe netdev eth0
# GID 0 is eth0's IPv6 link-local address, usable once duplicate address
# detection has passed (about a second after the link came up): before,
# address resolution to a link-local peer cannot send its solicitation and
# modify_qp to RTR fails (the gid0 exchanges would race the detection).
link_local_ready() {
  while read -r address index length scope flags name; do
    [ "\$name" = eth0 ] && [ "\$scope" = 20 ] && [ \$((0x\$flags & 0x40)) = 0 ] && return 0
  done < /proc/net/if_inet6
  return 1
}
tries=0
until link_local_ready || [ \$tries -ge 50 ]; do sleep 0.2; tries=\$((tries + 1)); done
echo "GUEST rxe ready"
serve() {  # name port command...
  name=\$1; port=\$2; shift 2
  "\$@" > /tmp/\$name 2>&1 &
  pid=\$!
  while ! netstat -ltn | grep -q ":\$port "; do sleep 0.2; done
  echo "GUEST LISTENING \$name"
  wait \$pid; status=\$?
  cat /tmp/\$name; echo "GUEST RESULT \$name \$status"
}
serve_cm() {  # name command...: an rdma_cm server, listening once rdma shows its cm_id
  name=\$1; shift
  timeout 120 "\$@" > /tmp/\$name 2>&1 &
  pid=\$!
  while ! rdma resource show cm_id 2>/dev/null | grep -q LISTEN; do sleep 0.2; done
  echo "GUEST LISTENING \$name"
  wait \$pid; status=\$?
  cat /tmp/\$name; echo "GUEST RESULT \$name \$status"
}
serve_mc() {  # name group-in-/proc/net/igmp command...: a multicast receiver, listening once
  name=\$1; group=\$2; shift 2  # the kernel joined its group (and a moment for the QP's attach)
  timeout 120 "\$@" > /tmp/\$name 2>&1 &
  pid=\$!
  while ! grep -qi "\$group" /proc/net/igmp && kill -0 \$pid 2>/dev/null; do sleep 0.2; done
  sleep 1
  echo "GUEST LISTENING \$name"
  wait \$pid; status=\$?
  cat /tmp/\$name; echo "GUEST RESULT \$name \$status"
}
send_mc() {  # name command...: a multicast sender; nothing says when the host's receiver has joined,
  name=\$1; shift  # so it sends three rounds, 3 s apart (the receiver takes the first whole round)
  for round in 1 2 3; do sleep 3; "\$@" > /tmp/\$name 2>&1; status=\$?; done
  cat /tmp/\$name; echo "GUEST RESULT \$name \$status"
}
connect() {  # name command...
  name=\$1; shift
  tries=0
  while true; do
    "\$@" > /tmp/\$name 2>&1; status=\$?
    grep -q "Couldn't connect\|Unable to\|Connection refused\|REJECTED\|UNREACHABLE, error: 1\$" /tmp/\$name || break
    tries=\$((tries + 1)); [ \$tries -ge 300 ] && break
    sleep 0.2
  done
  cat /tmp/\$name; echo "GUEST RESULT \$name \$status"
}
if [ -n "$capture_cm" ]; then
  echo "GUEST CM CAPTURE"
  sleep 2
  rping -c -a $host_address -p 7174 -C 1 -S 64 > /tmp/rping 2>&1 & pid=\$!; sleep 6; kill \$pid
  udaddy -s $host_address -p 7175 -c 1 > /tmp/udaddy 2>&1 & pid=\$!; sleep 6; kill \$pid
  cat /tmp/rping /tmp/udaddy
else
if [ "$cm_only" = 0 ]; then
serve rc_guest_server 18515 ibv_rc_pingpong -d rxe0 -g 1 -p 18515
connect rc_guest_client ibv_rc_pingpong -d rxe0 -g 1 -p 18516 $host_address
serve rc_gid0_guest_server 18521 ibv_rc_pingpong -d rxe0 -g 0 -p 18521
connect rc_gid0_guest_client ibv_rc_pingpong -d rxe0 -g 0 -p 18522 $host_address
serve mw_guest_lender 18530 $work/mw_exchange -w -p 18530
connect mw_guest_borrower $work/mw_exchange -p 18531 $host_address
serve write_guest_server 18517 ib_write_bw -d rxe0 -x 1 -n $bw_iterations -p 18517
connect write_guest_client ib_write_bw -d rxe0 -x 1 -n $bw_iterations -p 18518 $host_address
serve read_guest_server 18519 ib_read_bw -d rxe0 -x 1 -n $bw_iterations -p 18519
connect read_guest_client ib_read_bw -d rxe0 -x 1 -n $bw_iterations -p 18520 $host_address
fi
# The connection manager on the wire: the kernel's rdma_cm each way. Its
# tracepoints and the return values of the request handler's steps are
# printed at the end, for a REJ's reason (shown only when an exchange fails).
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
for events in rdma_cma ib_cma; do echo 1 > /sys/kernel/tracing/events/\$events/enable 2>/dev/null; done
for function in cma_ib_req_handler cma_ib_handler cma_ib_acquire_dev; do
  echo "r:\$function \$function ret=\\\$retval:s64" >> /sys/kernel/tracing/kprobe_events 2>/dev/null && echo 1 > /sys/kernel/tracing/events/kprobes/\$function/enable
done
serve_cm rping_guest_server rping -s -a $guest_address -p 7174 -v -C $rping_count
connect rping_guest_client rping -c -a $host_address -p 7175 -v -C $rping_count
serve_cm udaddy_guest_server udaddy
connect udaddy_guest_client udaddy -s $host_address
serve_cm rstream_guest_server rstream -b $guest_address -p 7177 -T v -S 65000 -C $rstream_count
connect rstream_guest_client rstream -s $host_address -p 7178 -T v -S 65000 -C $rstream_count
serve_cm riostream_guest_server riostream -b $guest_address -p 7179 -T v -S 65536 -C 10 -I 20
connect riostream_guest_client riostream -s $host_address -p 7180 -T v -S 65536 -C 10 -I 20
serve_mc mckey_guest_receiver 01284FEF mckey -m 239.79.40.1 -b $guest_address -C $mckey_count -S 1000
send_mc mckey_guest_sender mckey -m 239.79.40.2 -b $guest_address -s -C $mckey_count -S 1000
grep -v "^#" /sys/kernel/tracing/trace 2>/dev/null | tail -40 | sed 's/^/GUEST TRACE /'
fi
echo "GUEST ALL DONE"
poweroff -f
EOF
chmod +x "$rootfs/init"
(cd "$rootfs" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initramfs.gz")

# --- The network: a namespace with a tap for the guest; uroce uses the
# tap's raw Ethernet port with the address the kernel holds there.
console="$work/console.log"
: > "$console"
qemu_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill "$qemu_pid" 2> /dev/null || true
  ip netns del "$ns" 2> /dev/null || true
}
trap cleanup EXIT
trap "exit 1" INT TERM
ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" tuntap add dev tap0 mode tap
ip -n "$ns" addr add "$host_address/24" dev tap0
ip -n "$ns" link set tap0 up

ip netns exec "$ns" qemu-system-x86_64 -accel tcg -m 512 -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initramfs.gz" -append "console=ttyS0 quiet panic=-1" \
  -netdev tap,id=net0,ifname=tap0,script=no,downscript=no -device virtio-net-pci,netdev=net0,romfile= \
  ${UROCE_INTEROP_PCAP:+-object filter-dump,id=dump0,netdev=net0,file=$UROCE_INTEROP_PCAP} \
  > "$console" 2>&1 &
qemu_pid=$!

wait_for() {  # pattern seconds
  local deadline=$((SECONDS + $2))
  until grep -q "$1" "$console"; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$qemu_pid" 2> /dev/null; then
      echo "interop-softroce: the guest never said '$1'; its console:" >&2
      tail -40 "$console" >&2
      exit 1
    fi
    sleep 0.2
  done
}

failures=0
# A hung exchange (on either side: a client whose peer never answers blocks
# in read()) is stopped after exchange_seconds, with what each side was doing.
exchange_seconds="${UROCE_INTEROP_EXCHANGE_SECONDS:-180}"
host_run() {  # name command...: uroce's side, on the tap's raw port
  local name=$1; shift
  ip netns exec "$ns" env UROCE_STATS=1 "$build/tools/uroce" run --interface tap0 --address "$host_address" -- \
    "$@" > "$work/$name.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + exchange_seconds))
  while kill -0 "$pid" 2> /dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 "$pid" 2> /dev/null; then
    echo "interop-softroce: $name still runs after ${exchange_seconds} s; uroce's side:" >&2
    sed 's/^/  uroce: /' "$work/$name.log" >&2
    if command -v gdb > /dev/null; then
      gdb -p "$pid" -batch -ex 'thread apply all bt 12' 2> /dev/null | grep '^#\|^Thread' | sed 's/^/  stack: /' >&2
    fi
    echo "  the guest's console:" >&2
    tail -30 "$console" | sed 's/^/  guest: /' >&2
    kill -9 "$pid" 2> /dev/null
    exit 1  # the guest's side is stuck too: nothing after this could pass
  fi
  wait "$pid"
}
check() {  # name host-status
  local name=$1 host_status=$2 guest_status
  guest_status="$(grep -a "GUEST RESULT $name " "$console" | awk '{ print $4 }' | tr -d '\r')"
  local icrc_errors received
  icrc_errors="$(grep -o 'icrc errors [0-9]*' "$work/$name.log" | awk '{ print $3 }')"
  # The engine's count: "<device>: packets sent N received N" (the line has other "sent"s and "received"s).
  received="$(grep -o ': packets sent [0-9]* received [0-9]*' "$work/$name.log" | awk '{ print $NF }')"
  local least=1
  [ "$name" = mckey_guest_receiver ] && least=0  # uroce only sends to the guest's group there
  if [ "$host_status" = 0 ] && [ "$guest_status" = 0 ] && [ "${icrc_errors:-1}" = 0 ] && [ "${received:-0}" -ge "$least" ]; then
    echo "ok    $name (uroce received $received packets, 0 ICRC errors)"
  else
    echo "FAIL  $name: uroce exit $host_status, kernel exit ${guest_status:-none}, ICRC errors ${icrc_errors:-?}"
    sed 's/^/  uroce: /' "$work/$name.log"
    grep -a -B12 "GUEST RESULT $name " "$console" | grep -av "GUEST KERNEL" | sed 's/^/  kernel side: /'
    failures=$((failures + 1))
  fi
}
guest_serves() {  # name port command...
  local name=$1 port=$2; shift 2
  wait_for "GUEST LISTENING $name" 600
  local status=0
  host_run "$name" "$@" "$guest_address" || status=$?
  wait_for "GUEST RESULT $name " 600
  check "$name" "$status"
}
host_serves() {  # name port command...
  local name=$1 port=$2; shift 2
  local status=0
  host_run "$name" "$@" || status=$?
  wait_for "GUEST RESULT $name " 600
  check "$name" "$status"
}

wait_for "GUEST rxe ready" 300
if [ -n "$capture_cm" ]; then
  ip netns exec "$ns" tcpdump -i tap0 -U -w "$capture_cm" udp port 4791 > "$work/tcpdump.log" 2>&1 &
  tcpdump_pid=$!
  wait_for "GUEST ALL DONE" 120
  sleep 1
  kill "$tcpdump_pid"; wait "$tcpdump_pid" 2> /dev/null || true
  echo "interop-softroce: the kernel's CM frames are in $capture_cm"
  exit 0
fi
# The same on the host's side: tap0's link-local address (uroce's GID 0)
# answers neighbor solicitations only once its own detection has passed.
for _ in $(seq 50); do
  [ -z "$(ip -n "$ns" -6 addr show dev tap0 tentative)" ] && break
  sleep 0.2
done
echo "guest up: kernel Soft-RoCE (rxe0) at $guest_address, uroce on tap0 at $host_address"
if [ "$cm_only" = 0 ]; then
  guest_serves rc_guest_server 18515 ibv_rc_pingpong -g 1 -p 18515
  host_serves rc_guest_client 18516 ibv_rc_pingpong -g 1 -p 18516
  # GID 0, the link-local GIDs: RoCEv2 over IPv6 link-local each way.
  guest_serves rc_gid0_guest_server 18521 ibv_rc_pingpong -g 0 -p 18521
  host_serves rc_gid0_guest_client 18522 ibv_rc_pingpong -g 0 -p 18522
  # Memory windows: a type 2 window bound through the lender's QP, written
  # and read through its rkey, invalidated by a SEND, then refused; each side
  # lends once.
  guest_serves mw_guest_lender 18530 "$work/mw_exchange" -p 18530
  host_serves mw_guest_borrower 18531 "$work/mw_exchange" -w -p 18531
  guest_serves write_guest_server 18517 ib_write_bw -n "$bw_iterations" -p 18517
  host_serves write_guest_client 18518 ib_write_bw -n "$bw_iterations" -p 18518
  guest_serves read_guest_server 18519 ib_read_bw -n "$bw_iterations" -p 18519
  host_serves read_guest_client 18520 ib_read_bw -n "$bw_iterations" -p 18520
fi
# The connection manager on the wire: unmodified rping, each way (REQ, REP,
# RTU, the verified ping data, then DREQ and DREP).
guest_serves rping_guest_server 7174 rping -c -p 7174 -v -C "$rping_count" -a
host_serves rping_guest_client 7175 rping -s -a "$host_address" -p 7175 -v -C "$rping_count"
# A UD service (SIDR_REQ, SIDR_REP), then datagrams each way (port 7174 of
# the UDP port space).
guest_serves udaddy_guest_server 7174 udaddy -s
host_serves udaddy_guest_client 7174 udaddy
# rsockets: rdma-core's stream protocol (its connection data in the private
# data, RDMA WRITE with immediate into the peer's lent buffers, credits), each
# way, with every byte verified (rstream -T v) by both sides.
guest_serves rstream_guest_server 7177 rstream -p 7177 -T v -S 65000 -C "$rstream_count" -s
host_serves rstream_guest_client 7178 rstream -b "$host_address" -p 7178 -T v -S 65000 -C "$rstream_count"
# riostream: riomap's iomap table and riowrite (RDMA WRITE into the peer's
# mapped buffer, then a data message). It waits by spinning on memory, which
# needs the progress thread (docs/design/progress-engine.md).
guest_serves riostream_guest_server 7179 env UROCE_PROGRESS=thread riostream -p 7179 -T v -S 65536 -C 10 -I 20 -s
host_serves riostream_guest_client 7180 env UROCE_PROGRESS=thread riostream -b "$host_address" -p 7180 -T v -S 65536 -C 10 -I 20
# UD multicast with mckey (rdma_join_multicast), each way: the kernel's
# rdma_cm joins the group at the IP layer too (IGMP), uroce's raw port takes
# the group's MAC; the datagrams go to 01:00:5e:... and QPN 0xFFFFFF.
guest_serves mckey_guest_receiver 0 mckey -m 239.79.40.1 -b "$host_address" -s -C "$mckey_count" -S 1000
host_serves mckey_guest_sender 0 mckey -m 239.79.40.2 -b "$host_address" -C "$mckey_count" -S 1000
wait_for "GUEST ALL DONE" 120
if [ "$failures" -gt 0 ]; then
  grep -a "GUEST TRACE" "$console" | sed 's/^/  /'
  echo "interop-softroce: $failures exchange(s) failed"
  exit 1
fi
echo "interop-softroce: all exchanges passed in both directions"
