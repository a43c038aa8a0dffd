// concord export: writes a trained agent's network in PyTorch's file format (pytorch_export.h),
// for `torch.load` in Python, with concord.export.torch_module() to rebuild it as a module.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/pytorch_export.h"
#include "concord/cli/trained_agent.h"
#include "concord/core/progress_bar.h"

namespace concord::cli {
namespace {

struct ExportFlags {
  std::string path;
  std::string output;
};

void run_export(const ExportFlags& flags) {
  const TrainedCheckpoint trained = read_trained_checkpoint(flags.path);
  // Beside the checkpoint by default: the run directory holds what the run made.
  const std::filesystem::path file =
      flags.output.empty() ? trained.file.parent_path() / "policy.pt" : std::filesystem::path(flags.output);
  const ExportReport report = export_for_pytorch(trained, file);
  std::printf("%s %s after %s steps: %lld tensors, %s numbers -> %s\n", trained.config.get_string("train.algo").c_str(),
              trained.config.get_string("env.id").c_str(), core::format_count(trained.global_step).c_str(),
              static_cast<long long>(report.tensors), core::format_count(report.parameters).c_str(),
              report.file.string().c_str());
  std::printf("load in Python with: import concord.export; module = concord.export.torch_module(\"%s\")\n",
              report.file.string().c_str());
}

}  // namespace

void add_export_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "export", "Write a trained network for PyTorch (torch.load; concord.export.torch_module rebuilds it)");
  auto flags = std::make_shared<ExportFlags>();
  command->add_option("path", flags->path, "A run directory or a checkpoint file")->required();
  command->add_option("-o,--output", flags->output, "The file to write (default: policy.pt beside the checkpoint)");
  command->callback([flags] { run_export(*flags); });
}

}  // namespace concord::cli
