#pragma once
// The one way kovs joins a list into a message, and reads a whole file.
#include <string>
#include <string_view>

namespace kovs {

// "a, b, c" (or with `sep`): each item as `str(item)` makes it, a string as itself.
template <typename Range, typename Str>
std::string join(const Range& items, std::string_view sep, Str str) {
    std::string out;
    for (const auto& x : items) {
        if (!out.empty()) out += sep;
        out += str(x);
    }
    return out;
}
template <typename Range>
std::string join(const Range& items, std::string_view sep = ", ") {
    return join(items, sep, [](const auto& x) -> const auto& { return x; });
}

// A whole file's bytes; throws kovs::Error "<what> <path>: cannot read: <errno>".
std::string readFile(const std::string& path, const std::string& what);

}  // namespace kovs
