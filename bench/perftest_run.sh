# Shared by the perftest benchmarks (ibverbs_programs.sh, intra_host.sh):
# running a server and a client, and reading perftest's tables. Source it;
# it uses the caller's `port` (the last TCP port used; pair takes the next).

# A process already busy here (a leftover ping-pong spinning on a core of a
# 2-vCPU machine) skews every figure, tails most: say so before measuring.
already_busy=$(ps -eo pcpu=,pid=,args= --sort=-pcpu | awk '$1 > 50 { print; exit }')
if [[ -n $already_busy ]]; then
  echo "warning: a process is already busy on this machine; figures will be skewed: $already_busy" >&2
fi

# pair FILE SERVER-COMMAND CLIENT-COMMAND: runs both, the client's output to
# FILE; the commands may name the TCP port as \$port.
pair() {
  local file=$1 server=$2 client=$3
  port=$((port + 1))
  eval "$server" >"$file.server" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
  eval "$client" >"$file" 2>&1 || true
  wait "$pid" || true
}

# sockperf_pingpong ADDRESS FILE: a 1 s busy-polling UDP ping-pong of 16 B
# (sockperf pp --nonblocked) against a server on ADDRESS; its output to FILE.
sockperf_pingpong() {
  local address=$1 file=$2 server
  port=$((port + 1))
  sockperf sr --nonblocked -i "$address" -p "$port" >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  sockperf pp --nonblocked -i "$address" -p "$port" -m 16 -t 1 >"$file" 2>&1 || true
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
}

# The figures of one run: bandwidth, the average MB/s; latency, "typical 99% 99.9%".
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { value = $4 } END { print value ? value : "-" }' "$1"; }
lat_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 8 { value = $5 " " $8 " " $9 } END { print value ? value : "- - -" }' "$1"; }
# sockperf's: "median 99% 99.9%".
sockperf_lat_of() {
  awk '/percentile 50.000/ { median = $NF } /percentile 99.000/ { tail = $NF } /percentile 99.900/ { far = $NF }
       END { print (median ? median : "-") " " (tail ? tail : "-") " " (far ? far : "-") }' "$1"
}

# median FILE COLUMN: the median of one column of numbers ("-" if none).
median() {
  awk -v c="$2" '$c != "-" { print $c }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# cell FILE: "typical / 99% / 99.9%", each the median of its column.
cell() { echo "$(median "$1" 1) / $(median "$1" 2) / $(median "$1" 3)"; }
