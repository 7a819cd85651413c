// Training steps written as Chakra traces, for the examples and the tests:
// a data-parallel step (forward, then backward with gradient buckets
// all-reduced while the backward pass goes on, then the optimizer) and a
// mixture-of-experts step (each MoE layer dispatches tokens to the experts
// and combines them back with all-to-alls). Every rank runs the same trace.
// The sizes and times are made up to be plausible, not measured on a GPU.
#pragma once

#include <cstdint>

#include "chakra/trace.h"

namespace uroce::chakra {

struct DataParallelStep {
  std::uint32_t layers = 8;
  std::uint64_t forward_us = 300;   // per layer
  std::uint64_t backward_us = 600;  // per layer
  std::uint32_t buckets = 4;        // gradient buckets; layers split evenly among them
  std::uint64_t bucket_bytes = 8u << 20;
  std::uint64_t optimizer_us = 200;
};

struct MixtureOfExpertsStep {
  std::uint32_t layers = 4;
  std::uint64_t attention_us = 150;  // per layer, forward; backward takes twice as long
  std::uint64_t expert_us = 250;     // per layer, forward; backward takes twice as long
  std::uint64_t dispatch_bytes = 4u << 20;  // each all-to-all's send buffer per rank
  std::uint64_t dense_gradient_bytes = 8u << 20;  // the non-expert weights' all-reduce
  std::uint64_t optimizer_us = 100;
};

Trace data_parallel_step(const DataParallelStep& step);
Trace mixture_of_experts_step(const MixtureOfExpertsStep& step);

}  // namespace uroce::chakra
