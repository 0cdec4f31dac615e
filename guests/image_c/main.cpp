// lockstep-image-c: writes the stories_c int8 model image.
//
//   lockstep-image-c [--models DIR] [--synthetic] [--steps N] -o IMAGE.bin
//
// Loads DIR/stories260K.bin and tok512.bin (DIR: --models, else
// $LOCKSTEP_MODELS, else <source>/../shared/models); falls back to the
// synthetic model and tokenizer when the checkpoint is absent or with
// --synthetic.  Prints one line naming the model used.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "convert.h"
#include "quality.h"

int main(int argc, char** argv) {
  CLI::App app{"Writes the stories_c int8 model image (guests/stories_c/image_c.h)"};
  std::string models, output;
  bool synthetic = false;
  lockstep::image_c::ImageOptions opt;
  app.add_option("--models", models, "models folder (default: $LOCKSTEP_MODELS or ../shared/models)");
  app.add_flag("--synthetic", synthetic, "use the synthetic model even when the checkpoint exists");
  app.add_option("--steps", opt.n_steps, "story tokens to generate after BOS")->check(CLI::Range(0, 63));
  app.add_option("-o,--output", output, "image file to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::filesystem::path dir =
        models.empty() ? lockstep::host::models_dir(LOCKSTEP_SOURCE_DIR) : std::filesystem::path(models);
    lockstep::host::LoadedModel m = lockstep::host::load_model(dir, synthetic, std::cerr);
    opt.real_model = m.real;
    std::vector<std::uint8_t> image = lockstep::image_c::build_image(m.ck, m.tok, opt);
    std::ofstream out(output, std::ios::binary);
    out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    if (!out) throw std::runtime_error("cannot write " + output);
    std::cout << "lockstep-image-c: " << m.description << " -> " << output << " (" << image.size()
              << " bytes, " << opt.n_steps << " steps)\n";
  } catch (const std::exception& e) {
    std::cerr << "lockstep-image-c: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
