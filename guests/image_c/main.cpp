// lockstep-image-c: writes the stories_c int8 model image.
//
//   lockstep-image-c [--models DIR] [--synthetic] [--steps N] -o IMAGE.bin
//
// Loads DIR/stories260K.bin and tok512.bin (DIR: --models, else
// $LOCKSTEP_MODELS, else <source>/../shared/models).  A folder the user named
// must hold both files (else exit 2); only the default folder may lack the
// checkpoint, and then, as with --synthetic, the synthetic model and tokenizer
// are used.  Prints one line naming the model used.  Bad input or usage: one
// stderr line naming the flag or path, exit 2 (golden/tool_cli.h).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "convert.h"
#include "quality.h"
#include "tool_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"Writes the stories_c int8 model image (guests/stories_c/image_c.h)"};
  std::string output;
  lockstep::image_c::ImageOptions opt;
  namespace tool = lockstep::host::tool;
  tool::ModelOptions model;
  model.add(app);
  app.add_option("--steps", opt.n_steps, "story tokens to generate after BOS")->check(CLI::Range(0, 63));
  app.add_option("-o,--output", output, "image file to write")->required()->check(tool::nonempty());
  if (const auto code = tool::parse(app, argc, argv, "lockstep-image-c")) return *code;
  try {
    lockstep::host::LoadedModel m = model.load(LOCKSTEP_SOURCE_DIR, std::cerr);
    opt.real_model = m.real;
    std::vector<std::uint8_t> image = lockstep::image_c::build_image(m.ck, m.tok, opt);
    lockstep::host::write_file_bytes(output, image);
    std::cout << "lockstep-image-c: " << m.description << " -> " << output << " (" << image.size()
              << " bytes, " << opt.n_steps << " steps)\n";
    tool::finish_stdout();
  } catch (const std::bad_alloc&) {
    std::cerr << "lockstep-image-c: out of memory\n";
    return tool::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "lockstep-image-c: " << e.what() << "\n";
    return tool::kExitBadInput;
  }
  return 0;
}
