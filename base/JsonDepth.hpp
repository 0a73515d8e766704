#pragma once
// How deeply a JSON text nests its arrays and objects, found by one pass over
// the bytes (strings and their escapes skipped), with no recursion and no
// parse. nlohmann::json parses any depth, but dumping, comparing or copying
// a value recurses once per level: a text nested 100,000 levels deep, which
// is only 200 KB, overflows the stack (kovs-cni died with SIGSEGV on one).
// Whatever reads JSON from outside checks this first and refuses the text.
#include <cstddef>
#include <string_view>

namespace kovs {

// Deeper than any config, CNI result or API object kovs reads (a kind Node's
// managedFields nest about 10 levels).
constexpr size_t kMaxJsonDepth = 64;

size_t jsonNestingDepth(std::string_view text);

}  // namespace kovs
