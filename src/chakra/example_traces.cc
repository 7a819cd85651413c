// The example training steps, node by node.
#include "chakra/example_traces.h"

#include <fmt/format.h>

namespace uroce::chakra {

namespace {

constexpr std::uint64_t kNone = UINT64_MAX;  // no dependency

// Numbers nodes in the order they are added; a dependency on kNone is left out.
class TraceBuilder {
 public:
  TraceBuilder() { trace_.version = "0.0.4"; }

  std::uint64_t compute(const std::string& name, std::uint64_t duration_us, std::vector<std::uint64_t> deps) {
    TraceNode node = make(name, kCompNode, std::move(deps));
    node.duration_us = duration_us;
    return add(std::move(node));
  }
  std::uint64_t collective(const std::string& name, CommType type, std::uint64_t bytes,
                           std::vector<std::uint64_t> deps) {
    TraceNode node = make(name, kCommCollNode, std::move(deps));
    node.comm_type = type;
    node.comm_size = bytes;
    return add(std::move(node));
  }
  Trace take() { return std::move(trace_); }

 private:
  TraceNode make(const std::string& name, std::int32_t type, std::vector<std::uint64_t> deps) {
    TraceNode node;
    node.id = trace_.nodes.size();
    node.name = name;
    node.type = type;
    for (std::uint64_t dep : deps) {
      if (dep != kNone) node.deps.push_back(dep);
    }
    return node;
  }
  std::uint64_t add(TraceNode node) {
    trace_.nodes.push_back(std::move(node));
    return trace_.nodes.back().id;
  }

  Trace trace_;
};

}  // namespace

Trace data_parallel_step(const DataParallelStep& step) {
  TraceBuilder builder;
  std::uint64_t last = kNone;
  for (std::uint32_t layer = 0; layer < step.layers; ++layer) {
    last = builder.compute(fmt::format("layer{}.forward", layer), step.forward_us, {last});
  }
  // Backward runs from the last layer; a bucket's gradients are complete
  // once its layers' backward is done, and are all-reduced from then on.
  std::uint32_t per_bucket = std::max<std::uint32_t>(1, (step.layers + step.buckets - 1) / step.buckets);
  std::vector<std::uint64_t> reductions;
  for (std::uint32_t done = 0; done < step.layers; ++done) {
    std::uint32_t layer = step.layers - 1 - done;
    last = builder.compute(fmt::format("layer{}.backward", layer), step.backward_us, {last});
    if ((done + 1) % per_bucket == 0 || done + 1 == step.layers) {
      auto bucket = static_cast<std::uint32_t>(reductions.size());
      reductions.push_back(builder.collective(fmt::format("all_reduce.bucket{}", bucket), CommType::all_reduce,
                                              step.bucket_bytes, {last}));
    }
  }
  reductions.push_back(last);
  builder.compute("optimizer.step", step.optimizer_us, reductions);
  return builder.take();
}

Trace mixture_of_experts_step(const MixtureOfExpertsStep& step) {
  TraceBuilder builder;
  std::uint64_t last = kNone;
  for (std::uint32_t layer = 0; layer < step.layers; ++layer) {
    last = builder.compute(fmt::format("layer{}.attention.forward", layer), step.attention_us, {last});
    last = builder.collective(fmt::format("layer{}.dispatch", layer), CommType::all_to_all, step.dispatch_bytes,
                              {last});
    last = builder.compute(fmt::format("layer{}.experts.forward", layer), step.expert_us, {last});
    last = builder.collective(fmt::format("layer{}.combine", layer), CommType::all_to_all, step.dispatch_bytes,
                              {last});
  }
  for (std::uint32_t done = 0; done < step.layers; ++done) {
    std::uint32_t layer = step.layers - 1 - done;
    last = builder.collective(fmt::format("layer{}.combine.backward", layer), CommType::all_to_all,
                              step.dispatch_bytes, {last});
    last = builder.compute(fmt::format("layer{}.experts.backward", layer), 2 * step.expert_us, {last});
    last = builder.collective(fmt::format("layer{}.dispatch.backward", layer), CommType::all_to_all,
                              step.dispatch_bytes, {last});
    last = builder.compute(fmt::format("layer{}.attention.backward", layer), 2 * step.attention_us, {last});
  }
  std::uint64_t reduced = builder.collective("all_reduce.dense_gradients", CommType::all_reduce,
                                             step.dense_gradient_bytes, {last});
  builder.compute("optimizer.step", step.optimizer_us, {reduced});
  return builder.take();
}

}  // namespace uroce::chakra
