// The simulator's command line: load and check the scenario, run it with a
// progress bar on stderr, write the outputs, print the summary.
#include "tools/uroce/sim_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "sim/chakra_report.h"
#include "sim/scenario_file.h"
#include "sim/series_report.h"
#include "sim/sim_report.h"

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

int run_sim(const SimRunOptions& options) {
  auto scenario = sim::load_scenario(options.scenario_path);
  if (!scenario) {
    std::fprintf(stderr, "uroce sim: %s\n", scenario.error().c_str());
    return 1;
  }
  if (options.seed) scenario->seed = *options.seed;
  scenario->threads = options.threads;
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) {
    std::fprintf(stderr, "uroce sim: cannot create %s: %s\n", options.out_dir.c_str(), error.message().c_str());
    return 1;
  }
  bool show_progress = !options.quiet && ::isatty(STDERR_FILENO);
  sim::SimResult result;
  try {
    result = sim::run_simulation(*scenario, show_progress ? draw_progress : std::function<void(double)>{},
                                 options.out_dir);
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "uroce sim: %s: %s\n", options.scenario_path.c_str(), failure.what());
    return 1;
  }
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
                  "(flows, collectives and Chakra replays alike)")
      ->check(CLI::Range(1, 64));
  run->callback([options, &exit_status] { exit_status = run_sim(*options); });
}

}  // namespace uroce::tools
