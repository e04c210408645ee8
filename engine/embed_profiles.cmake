# Writes OUT: the built-in simulation profiles of DIR (engine/profiles/*.json) as a C++ table of file name and
# text, so that the binary carries them wherever it is installed (run by the engine's build, cmake -P).
file(GLOB files "${DIR}/*.json")
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  file(READ "${f}" text)
  get_filename_component(name "${f}" NAME)
  string(APPEND body "      {\"${name}\", R\"tbprofile(${text})tbprofile\"},\n")
endforeach()
set(out "// Generated from engine/profiles/*.json by engine/embed_profiles.cmake: do not edit.\n#include <string>\n#include <utility>\n#include <vector>\n\nnamespace tb::engine {\nconst std::vector<std::pair<std::string, std::string>>& embedded_profile_files() {\n  static const std::vector<std::pair<std::string, std::string>> files = {\n${body}  };\n  return files;\n}\n}  // namespace tb::engine\n")
file(WRITE "${OUT}.tmp" "${out}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
