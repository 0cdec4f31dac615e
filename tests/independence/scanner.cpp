#include "scanner.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace lockstep::independence {

namespace fs = std::filesystem;

namespace {

bool is_source(const fs::path& p) {
  static const std::set<std::string> kExt = {".h",  ".hh",  ".hpp", ".hxx", ".c",   ".cc", ".cpp",
                                             ".cxx", ".cu", ".cuh", ".inc", ".ipp", ".inl", ".tcc"};
  return kExt.count(p.extension().string()) > 0;
}

bool is_cmake(const fs::path& p) {
  return p.filename() == "CMakeLists.txt" || p.extension() == ".cmake";
}

bool skipped_dir(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("build", 0) == 0 || (!name.empty() && name[0] == '.');
}

// Regular files under `dir`, skipping build and hidden folders.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory() && skipped_dir(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// True when `path` ends with the components of `suffix` (both relative or not).
bool ends_with_components(const fs::path& path, const fs::path& suffix) {
  std::vector<fs::path> a(path.begin(), path.end()), b(suffix.begin(), suffix.end());
  if (b.empty() || b.size() > a.size()) return false;
  return std::equal(b.rbegin(), b.rend(), a.rbegin());
}

bool inside(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_normal().lexically_relative(dir.lexically_normal());
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

std::vector<Include> includes_of(const std::string& text) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<Include> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::smatch m;
    if (std::regex_search(line, m, kInclude)) out.push_back({number, m[2].str(), m[1] == "\""});
  }
  return out;
}

std::string strip_cmake_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false, in_comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      in_comment = false;
      out += c;
      continue;
    }
    if (in_comment) continue;
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) in_string = !in_string;
    if (c == '#' && !in_string) {
      in_comment = true;
      continue;
    }
    out += c;
  }
  return out;
}

std::vector<Violation> include_violations(const fs::path& root, const Side& from,
                                          const Side& other) {
  std::vector<Violation> out;
  const fs::path from_dir = root / from.folder, other_dir = root / other.folder;
  const auto other_files = files_under(other_dir);
  if (other_files.empty()) return out;
  // Every file of the tree outside `other`, for the "exists only there" test.
  std::vector<fs::path> elsewhere;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory() || skipped_dir(entry.path()) || entry.path() == other_dir) continue;
    for (auto& f : files_under(entry.path())) elsewhere.push_back(f.lexically_relative(root));
  }

  for (const auto& file : files_under(from_dir)) {
    if (!is_source(file)) continue;
    const std::string rel_file = file.lexically_relative(root).string();
    for (const auto& include : includes_of(read_text(file))) {
      const std::string& inc = include.path;
      const fs::path inc_path(inc);
      std::string reason;
      for (const auto& component : inc_path) {
        if (component == other.folder) reason = "path names " + other.folder + "/";
      }
      if (reason.empty() && inside(file.parent_path() / inc_path, other_dir)) {
        reason = "resolves into " + other.folder + "/";
      }
      if (reason.empty() && include.quoted) {
        const bool in_other = std::any_of(other_files.begin(), other_files.end(), [&](auto& f) {
          return ends_with_components(f.lexically_relative(root), inc_path);
        });
        const bool in_elsewhere = std::any_of(elsewhere.begin(), elsewhere.end(), [&](auto& f) {
          return ends_with_components(f, inc_path);
        });
        if (in_other && !in_elsewhere) reason = "matches a file that exists only in " + other.folder + "/";
      }
      if (!reason.empty()) {
        out.push_back({rel_file, include.line, "includes \"" + inc + "\" (" + reason + ")"});
      }
    }
  }
  return out;
}

std::vector<Violation> cmake_violations(const fs::path& root, const Side& from, const Side& other) {
  std::vector<Violation> out;
  const std::regex target("\\b" + other.target + "(_\\w+)?\\b");
  const std::regex path("(\\}|\\.\\.)/" + other.folder + "(?=[/\"\\s)]|$)");
  for (const auto& file : files_under(root / from.folder)) {
    if (!is_cmake(file)) continue;
    const std::string rel_file = file.lexically_relative(root).string();
    std::istringstream in(strip_cmake_comments(read_text(file)));
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch m;
      if (std::regex_search(line, m, target)) {
        out.push_back({rel_file, number, "names " + other.folder + "'s target " + m[0].str()});
      } else if (std::regex_search(line, m, path)) {
        out.push_back({rel_file, number, "reaches into " + other.folder + "/ (" + m[0].str() + ")"});
      }
    }
  }
  return out;
}

std::string describe(const std::vector<Violation>& violations) {
  std::string out;
  for (const auto& v : violations) {
    out += v.file + ":" + std::to_string(v.line) + ": " + v.reason + "\n";
  }
  return out;
}

}  // namespace lockstep::independence
