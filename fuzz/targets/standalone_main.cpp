// Standalone driver for the libFuzzer targets (fuzz/README.md): builds with any compiler, so
// the GCC sanitizer build (ci/test) runs every target over its seed corpus as the `fuzz-smoke`
// tests.  No fuzzing engine: each input is run once, then optionally N pseudo-random
// mutations of each seed from a fixed seed that is printed (a failure replays exactly).
//
//   <target> [--mutations N] [--seed S] [--max-len L] FILE_OR_DIR...
//
// Directories are read non-recursively, files in sorted order.  The target is called with a
// fresh heap copy of exactly the input bytes (ASan sees reads past the end).  A crash,
// sanitizer report or uncaught exception fails the run; the input that was running is printed
// first and, for mutations, written to ./fuzz-smoke-crash-<target>-<seed>-<n> for replay.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

std::string g_current = "(none)";  // what is running, printed by the terminate handler

void run_one(const std::vector<std::uint8_t>& bytes) {
  // An exact-size heap copy so an out-of-bounds read is an ASan report.
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[bytes.empty() ? 1 : bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.empty() ? nullptr : copy.get(), bytes.size());
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz-smoke: cannot read %s\n", p.string().c_str());
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// libFuzzer-like byte mutations (a few per input): flip bits, set interesting values, insert,
/// erase, duplicate a block, overwrite with a 32-bit value, cross over with another seed.
std::vector<std::uint8_t> mutate(std::vector<std::uint8_t> b, std::mt19937_64& rng,
                                 const std::vector<std::vector<std::uint8_t>>& seeds,
                                 std::size_t max_len) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : std::size_t(rng() % n); };
  static constexpr std::uint32_t kInteresting[] = {0,          1,          0x7f,       0x80,
                                                   0xff,       0x100,      0x7fff,     0x8000,
                                                   0xffff,     0x10000,    0x7fffffff, 0x80000000,
                                                   0xffffffff, 0x110000,   0x10000000, 4096};
  const int rounds = 1 + int(rng() % 4);
  for (int r = 0; r < rounds; ++r) {
    switch (rng() % 8) {
      case 0:  // bit flip
        if (!b.empty()) b[pick(b.size())] ^= std::uint8_t(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!b.empty()) b[pick(b.size())] = std::uint8_t(rng());
        break;
      case 2: {  // interesting 32-bit little-endian value
        if (b.size() < 4) break;
        const std::size_t at = pick(b.size() - 3);
        const std::uint32_t v = kInteresting[rng() % std::size(kInteresting)];
        for (int i = 0; i < 4; ++i) b[at + i] = std::uint8_t(v >> (8 * i));
        break;
      }
      case 3: {  // insert random bytes
        const std::size_t n = 1 + pick(8), at = pick(b.size() + 1);
        std::vector<std::uint8_t> ins(n);
        for (auto& x : ins) x = std::uint8_t(rng());
        b.insert(b.begin() + std::ptrdiff_t(at), ins.begin(), ins.end());
        break;
      }
      case 4: {  // erase a block
        if (b.empty()) break;
        const std::size_t at = pick(b.size()), n = 1 + pick(std::min<std::size_t>(16, b.size() - at));
        b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
        break;
      }
      case 5:  // truncate
        if (!b.empty()) b.resize(pick(b.size()));
        break;
      case 6: {  // copy a block within the input
        if (b.size() < 2) break;
        const std::size_t from = pick(b.size()), to = pick(b.size());
        const std::size_t n = 1 + pick(std::min<std::size_t>(32, b.size() - std::max(from, to)));
        std::memmove(b.data() + to, b.data() + from, n);
        break;
      }
      case 7: {  // cross over: splice a prefix of another seed
        const auto& other = seeds[pick(seeds.size())];
        if (other.empty()) break;
        const std::size_t at = pick(b.size() + 1), n = 1 + pick(other.size());
        const std::size_t from = pick(other.size() - n + 1);
        b.resize(std::max(b.size(), at + n));
        std::memcpy(b.data() + at, other.data() + from, n);
        break;
      }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
  return b;
}

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] [--max-len L] FILE_OR_DIR...\n", argv0);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mutations = 0, seed = 1;
  std::size_t max_len = 1 << 20;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::uint64_t {
      if (i + 1 >= argc) usage(argv[0]);
      return std::strtoull(argv[++i], nullptr, 0);
    };
    if (a == "--mutations") {
      mutations = value();
    } else if (a == "--seed") {
      seed = value();
    } else if (a == "--max-len") {
      max_len = std::size_t(value());
    } else if (!a.empty() && a[0] == '-') {
      usage(argv[0]);
    } else if (fs::is_directory(a)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(a)) {
      files.emplace_back(a);
    } else {
      std::fprintf(stderr, "fuzz-smoke: no such file or directory: %s\n", a.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "fuzz-smoke: no inputs (a seed corpus is required)\n");
    return 2;
  }
  const std::string target = fs::path(argv[0]).filename().string();
  std::set_terminate([] {
    std::fprintf(stderr, "fuzz-smoke: uncaught exception while running %s\n", g_current.c_str());
    if (auto e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::fprintf(stderr, "fuzz-smoke: what(): %s\n", x.what());
      } catch (...) {
      }
    }
    std::abort();
  });

  std::vector<std::vector<std::uint8_t>> seeds;
  for (const auto& f : files) {
    seeds.push_back(read_file(f));
    g_current = f.string();
    run_one(seeds.back());
  }
  std::printf("%s: %zu seed inputs passed\n", target.c_str(), seeds.size());
  std::fflush(stdout);

  if (mutations > 0) {
    std::printf("%s: %llu mutations per seed, --seed %llu\n", target.c_str(),
                (unsigned long long)mutations, (unsigned long long)seed);
    std::fflush(stdout);
    std::mt19937_64 rng(seed);
    for (std::size_t s = 0; s < seeds.size(); ++s) {
      for (std::uint64_t m = 0; m < mutations; ++m) {
        const std::vector<std::uint8_t> input = mutate(seeds[s], rng, seeds, max_len);
        g_current = "mutation " + std::to_string(m) + " of " + files[s].string() + " (--seed " +
                    std::to_string(seed) + ")";
        // Written before running so a crash leaves the reproducer behind; removed on success.
        const std::string repro = "fuzz-smoke-crash-" + target + "-" + std::to_string(seed);
        {
          std::ofstream out(repro, std::ios::binary);
          out.write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size()));
        }
        g_current += ", input saved as " + repro;
        run_one(input);
        std::error_code ec;
        fs::remove(repro, ec);
      }
    }
    std::printf("%s: %llu mutated inputs passed\n", target.c_str(),
                (unsigned long long)(mutations * seeds.size()));
  }
  return 0;
}
