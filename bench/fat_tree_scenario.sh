# The fat-tree benchmark scenario (the issue's reference: 100 Gb/s links,
# 1 us per hop, MTU 4096, PFC on, a permutation of 2 MiB flows), written
# for a given k. Sourced by bench/sim_fat_tree.sh and bench/sim_vs_ns3.sh.
# Usage: write_fat_tree_scenario K FILE
write_fat_tree_scenario() {
  cat > "$2" <<TOML
name = "fat-tree k=$1, permutation of 2 MiB flows"
seed = 1
[topology]
kind = "fat_tree"
k = $1
link_gbps = 100
delay_ns = 1000
[switch]
pfc = true
[transport]
mtu = 4096
[[workloads]]
kind = "permutation"
bytes = 2097152
TOML
}
