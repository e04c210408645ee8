# Writes OUT: the knob table IN (python/tunebench/knobs.json) as a C++ string, so that the binaries carry the
# table the launcher reads wherever they are installed (run by the build, cmake -P).
file(READ "${IN}" text)
set(out "// Generated from python/tunebench/knobs.json by knobs/embed_table.cmake: do not edit.\nnamespace tb::knobs::detail {\nextern const char* const kTableText;\nconst char* const kTableText = R\"tbknobs(${text})tbknobs\";\n}  // namespace tb::knobs::detail\n")
file(WRITE "${OUT}.tmp" "${out}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
