// The simulator's command line: load and check the scenario, run it with a
// progress bar on stderr, write the outputs, print the summary. Started by
// mpirun, each process is one rank of the run; rank 0 writes and prints.
#include "tools/uroce/sim_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "common/fnv1a.h"
#include "sim/chakra_report.h"
#include "sim/scenario_file.h"
#include "sim/series_report.h"
#include "sim/sim_report.h"
#ifdef UROCE_WITH_MPI
#include "sim_mpi/mpi_ranks.h"
#endif

namespace uroce::tools {

namespace {

struct SimRunOptions {
  std::string scenario_path;
  std::string out_dir;
  std::optional<std::uint64_t> seed;
  bool quiet = false;
  std::uint32_t threads = 1;
};

bool write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream file(path);
  file << content;
  return static_cast<bool>(file);
}

// A one-line bar redrawn in place when stderr is a terminal; silent otherwise.
void draw_progress(double fraction) {
  static int last_percent = -1;
  int percent = static_cast<int>(fraction * 100);
  if (percent == last_percent) return;
  last_percent = percent;
  constexpr int kWidth = 40;
  int filled = percent * kWidth / 100;
  std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(kWidth - filled), ' ').c_str(), percent);
  if (percent >= 100) std::fprintf(stderr, "\n");
}

// A 64-bit FNV-1a of a file's bytes (empty when it cannot be read).
std::string file_digest(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return {};
  std::uint64_t hash = kFnv1aStart;
  char buffer[1 << 16];
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    hash = fnv1a(std::string_view(buffer, static_cast<std::size_t>(file.gcount())), hash);
  }
  return fmt::format("{:016x}", hash);
}

// The process's part in the run: one rank of many under mpirun, or the whole.
struct RunRanks {
  sim::RankGroup* group = nullptr;  // null: this process alone
  std::uint32_t rank = 0;
  std::uint32_t size = 1;
  std::function<void(int)> abort;  // ends every rank (set when there are several)
};

// An error on one rank of several: print it, then end them all (the others
// may wait in a collective call for this one). Alone: return 1.
int fail(const RunRanks& ranks, const std::string& message) {
  if (ranks.size > 1) {
    std::fprintf(stderr, "uroce sim (rank %u of %u): %s\n", ranks.rank, ranks.size, message.c_str());
    std::fflush(stderr);
    ranks.abort(1);
  }
  std::fprintf(stderr, "uroce sim: %s\n", message.c_str());
  return 1;
}

int run_sim(const SimRunOptions& options, const RunRanks& ranks) {
  if (ranks.size > 1) {  // every rank must run the same program on the same scenario, first of all
    std::string what = fmt::format("uroce build {}, scenario {}, seed {}, threads {}", file_digest("/proc/self/exe"),
                                   file_digest(options.scenario_path),
                                   options.seed ? std::to_string(*options.seed) : "the scenario's", options.threads);
    std::vector<std::uint32_t> differ = sim::ranks_that_differ(*ranks.group, what);
    if (!differ.empty()) {
      std::fprintf(stderr, "uroce sim (rank %u of %u): ranks %s run another build, scenario or option than rank 0; %s\n",
                   ranks.rank, ranks.size, fmt::format("{}", fmt::join(differ, ", ")).c_str(), what.c_str());
      return 1;
    }
  }
  // From here to the run, every rank finds the same: each says so, none waits for another.
  std::string rank_label = ranks.size > 1 ? fmt::format(" (rank {} of {})", ranks.rank, ranks.size) : "";
  auto scenario = sim::load_scenario(options.scenario_path);
  if (!scenario) {
    std::fprintf(stderr, "uroce sim%s: %s\n", rank_label.c_str(), scenario.error().c_str());
    return 1;
  }
  if (options.seed) scenario->seed = *options.seed;
  scenario->threads = options.threads;
  try {
    sim::check_scenario(*scenario);
  } catch (const std::exception& problem) {
    std::fprintf(stderr, "uroce sim%s: %s: %s\n", rank_label.c_str(), options.scenario_path.c_str(), problem.what());
    return 1;
  }
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) return fail(ranks, "cannot create " + options.out_dir + ": " + error.message());
  bool show_progress = !options.quiet && ranks.rank == 0 && ::isatty(STDERR_FILENO);
  sim::SimResult result;
  try {
    result = sim::run_simulation(*scenario, show_progress ? draw_progress : std::function<void(double)>{},
                                 options.out_dir, ranks.group);
  } catch (const std::exception& failure) {
    return fail(ranks, options.scenario_path + ": " + failure.what());
  }
  if (ranks.rank != 0) return 0;
  std::filesystem::path out(options.out_dir);
  std::vector<sim::OutputFile> files = {{"summary.json", sim::summary_json(*scenario, result).dump(2) + "\n"},
                                        {"flows.csv", sim::flows_csv(result)}};
  for (sim::OutputFile& file : sim::series_files(*scenario, result)) files.push_back(std::move(file));
  if (!scenario->chakra.empty()) files.push_back({"timeline.json", sim::chakra_timeline(*scenario, result)});
  std::string written;
  for (const sim::OutputFile& file : files) {
    if (!write_file(out / file.name, file.content)) {
      std::fprintf(stderr, "uroce sim: cannot write %s\n", (out / file.name).c_str());
      return 1;
    }
    written += (written.empty() ? "" : " ") + file.name;
  }
  for (const auto& [from, to] : scenario->captures) written += " " + sim::capture_file_name(from, to);
  std::fputs(sim::human_summary(*scenario, result).c_str(), stdout);
  std::printf("wrote into %s: %s\n", options.out_dir.c_str(), written.c_str());
  return 0;
}

}  // namespace

void add_sim_command(CLI::App& app, int& exit_status) {
  CLI::App* sim = app.add_subcommand("sim", "Packet-level fabric simulation running the uroce engine");
  sim->require_subcommand(1);
  auto options = std::make_shared<SimRunOptions>();
  CLI::App* run = sim->add_subcommand("run", "Run a scenario file");
  run->add_option("scenario", options->scenario_path, "Scenario file (TOML)")->required()->check(CLI::ExistingFile);
  run->add_option("--out", options->out_dir, "Directory for summary.json and flows.csv")->required();
  run->add_option("--seed", options->seed, "Seed, instead of the scenario's");
  run->add_flag("--quiet", options->quiet, "No progress bar");
  run->add_option("--threads", options->threads,
                  "Threads to run the fabric's partitions on; the results are the same for any number "
                  "(flows, collectives and Chakra replays alike); under mpirun, threads per rank")
      ->check(CLI::Range(1, 64));
  run->callback([options, &exit_status] {
    RunRanks ranks;
#ifdef UROCE_WITH_MPI
    std::unique_ptr<sim_mpi::MpiRanks> mpi;
    if (sim_mpi::launched_by_mpirun()) {
      try {
        mpi = std::make_unique<sim_mpi::MpiRanks>();
      } catch (const std::exception& failure) {
        std::fprintf(stderr, "uroce sim: %s\n", failure.what());
        exit_status = 1;
        return;
      }
      ranks = RunRanks{mpi.get(), mpi->rank(), mpi->size(), [raw = mpi.get()](int code) { raw->abort(code); }};
    }
#else
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (size != nullptr && std::string(size) != "1") {
      std::fprintf(stderr, "uroce sim: this uroce was built without MPI; run it without mpirun\n");
      exit_status = 1;
      return;
    }
#endif
    exit_status = run_sim(*options, ranks);
  });
}

}  // namespace uroce::tools
