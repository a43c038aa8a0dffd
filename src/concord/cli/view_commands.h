#pragma once

namespace CLI {
class App;
}

namespace concord::cli {

// `concord plot` and `concord board`: commands that look at runs (the view layer) and train nothing.
// Declared apart from commands.h, which every training command includes, so that adding them
// rebuilt none of those.
void add_plot_command(CLI::App& app);
void add_board_command(CLI::App& app);

}  // namespace concord::cli
