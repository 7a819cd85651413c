// The simulator benchmark's scenario in ns-3 (Debian's libns3-dev), as a
// same-run peer for bench/sim_vs_ns3.sh: a 3-tier k-ary fat-tree of
// point-to-point links (100 Gb/s, 1 us), every switch an IPv4 router with
// ECMP, and a permutation of 2 MiB transfers. ns-3 has no RoCE or PFC, so
// each transfer is a TCP bulk send with 4000-byte segments: the same bytes
// in about the same number of data packets over the same fabric, under a
// different transport. Prints one line: k, hosts, data packets, events,
// simulated and wall seconds.
// Usage: ns3_fat_tree K [SEED]
#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

using namespace ns3;

namespace {

constexpr std::uint32_t kFlowBytes = 2 << 20;
constexpr std::uint32_t kSegmentBytes = 4000;

std::uint64_t g_data_packets = 0;  // data segments hosts put on their links (once each, as uroce counts)

void count_transmit(Ptr<const Packet> packet) {
  if (packet->GetSize() >= kSegmentBytes) ++g_data_packets;
}

// Stops the run once every sink has its flow's bytes (checked every 10 us).
void stop_when_done(std::vector<Ptr<PacketSink>> sinks, std::uint64_t expected) {
  std::uint64_t received = 0;
  for (const Ptr<PacketSink>& sink : sinks) received += sink->GetTotalRx();
  if (received >= expected) {
    Simulator::Stop();
    return;
  }
  Simulator::Schedule(MicroSeconds(10), &stop_when_done, sinks, expected);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s K [SEED]\n", argv[0]);
    return 2;
  }
  std::uint32_t k = static_cast<std::uint32_t>(std::atoi(argv[1]));
  std::uint32_t seed = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 1;
  if (k < 2 || k % 2 != 0 || k > 64) {
    std::fprintf(stderr, "K must be even, 2 to 64\n");
    return 2;
  }
  auto wall_start = std::chrono::steady_clock::now();
  RngSeedManager::SetSeed(seed);
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentBytes));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));

  std::uint32_t half = k / 2;
  std::uint32_t hosts_count = k * k * k / 4;
  NodeContainer hosts, edges, aggs, cores;
  hosts.Create(hosts_count);
  edges.Create(k * half);
  aggs.Create(k * half);
  cores.Create(half * half);
  InternetStackHelper stack;
  stack.Install(hosts);
  stack.Install(edges);
  stack.Install(aggs);
  stack.Install(cores);

  PointToPointHelper link;
  link.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
  link.SetDeviceAttribute("Mtu", UintegerValue(kSegmentBytes + 100));
  link.SetChannelAttribute("Delay", StringValue("1us"));
  Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
  std::vector<Ipv4Address> host_address(hosts_count);
  auto connect = [&](Ptr<Node> a, Ptr<Node> b) {
    NetDeviceContainer devices = link.Install(a, b);
    Ipv4InterfaceContainer interfaces = addresses.Assign(devices);
    addresses.NewNetwork();
    return interfaces.GetAddress(0);
  };
  for (std::uint32_t pod = 0; pod < k; ++pod) {
    for (std::uint32_t e = 0; e < half; ++e) {
      Ptr<Node> edge = edges.Get(pod * half + e);
      for (std::uint32_t h = 0; h < half; ++h) {
        std::uint32_t host = (pod * half + e) * half + h;
        host_address[host] = connect(hosts.Get(host), edge);
      }
      for (std::uint32_t a = 0; a < half; ++a) connect(edge, aggs.Get(pod * half + a));
    }
    for (std::uint32_t a = 0; a < half; ++a) {
      for (std::uint32_t c = 0; c < half; ++c) connect(aggs.Get(pod * half + a), cores.Get(a * half + c));
    }
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  // A random derangement (one cycle, so nobody sends to itself), as uroce's
  // permutation workload draws it.
  std::vector<std::uint32_t> order(hosts_count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(seed);
  for (std::uint32_t i = hosts_count - 1; i > 0; --i) std::swap(order[i], order[random() % i]);
  constexpr std::uint16_t kPort = 5000;
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), kPort));
  ApplicationContainer sink_apps = sink.Install(hosts);
  sink_apps.Start(Seconds(0));
  std::vector<Ptr<PacketSink>> sinks;
  for (std::uint32_t h = 0; h < hosts_count; ++h) sinks.push_back(DynamicCast<PacketSink>(sink_apps.Get(h)));
  for (std::uint32_t h = 0; h < hosts_count; ++h) {
    BulkSendHelper sender("ns3::TcpSocketFactory", InetSocketAddress(host_address[order[h]], kPort));
    sender.SetAttribute("MaxBytes", UintegerValue(kFlowBytes));
    sender.SetAttribute("SendSize", UintegerValue(kSegmentBytes));
    sender.Install(hosts.Get(h)).Start(Seconds(0));
  }
  for (std::uint32_t h = 0; h < hosts_count; ++h) {
    hosts.Get(h)->GetDevice(1)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&count_transmit));
  }
  Simulator::Schedule(MicroSeconds(10), &stop_when_done, sinks, std::uint64_t{kFlowBytes} * hosts_count);
  double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  auto run_start = std::chrono::steady_clock::now();
  Simulator::Stop(Seconds(1));
  Simulator::Run();
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  std::printf("k=%u hosts=%u data_packets=%llu events=%llu sim_s=%.6f setup_s=%.2f run_s=%.2f\n", k, hosts_count,
              static_cast<unsigned long long>(g_data_packets),
              static_cast<unsigned long long>(Simulator::GetEventCount()), Simulator::Now().GetSeconds(), setup_s,
              run_s);
  Simulator::Destroy();
  return 0;
}
