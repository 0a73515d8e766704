// The fuzz targets without libFuzzer: for builds whose compiler has no
// -fsanitize=fuzzer (gcc, the aarch64 cross build under qemu). Each target's
// LLVMFuzzerTestOneInput is fed its seed corpus, then a fixed number of
// mutations of those seeds from a fixed-seed generator, so a run is the same
// on every machine and a failure is reproduced by running it again. It has no
// coverage feedback: it replays, it does not search (scripts/test.sh's fuzz
// suite does that, with clang).
//
//   replay_<target> [--mutations N] CORPUS_DIR_OR_FILE...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

void feed(const Bytes& input) {
    // An exact-size heap copy, so that a read past the end is one the
    // sanitizers (or the allocator) can see.
    auto* copy = static_cast<uint8_t*>(std::malloc(std::max<size_t>(input.size(), 1)));
    if (!input.empty()) std::memcpy(copy, input.data(), input.size());
    LLVMFuzzerTestOneInput(copy, input.size());
    std::free(copy);
}

Bytes readFile(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

// One mutation of the kinds libFuzzer starts with: flip a bit, set a byte to
// an interesting value, insert or erase a byte, cut the tail, copy a chunk.
Bytes mutate(Bytes b, std::mt19937& rng) {
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    static constexpr uint8_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, '"', '{', '}', '[', ']', ',', ':', '\\', '\n'};
    switch (pick(6)) {
        case 0:
            if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
            break;
        case 1:
            if (!b.empty()) b[pick(b.size())] = interesting[pick(sizeof interesting)];
            break;
        case 2: b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), static_cast<uint8_t>(rng())); break;
        case 3:
            if (!b.empty()) b.erase(b.begin() + static_cast<long>(pick(b.size())));
            break;
        case 4:
            if (!b.empty()) b.resize(pick(b.size()));
            break;
        default:
            if (b.size() > 1) {
                size_t from = pick(b.size()), len = 1 + pick(std::min<size_t>(16, b.size() - from));
                Bytes chunk(b.begin() + static_cast<long>(from), b.begin() + static_cast<long>(from + len));
                b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), chunk.begin(), chunk.end());
            }
    }
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    long mutations = 0;
    std::vector<Bytes> seeds;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--mutations" && i + 1 < argc) {
            mutations = std::strtol(argv[++i], nullptr, 10);
            continue;
        }
        std::error_code ec;
        if (std::filesystem::is_directory(arg, ec)) {
            std::vector<std::filesystem::path> files;
            for (const auto& e : std::filesystem::directory_iterator(arg))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());  // the same order everywhere
            for (const auto& f : files) seeds.push_back(readFile(f));
        } else if (std::filesystem::is_regular_file(arg, ec)) {
            seeds.push_back(readFile(arg));
        } else {
            std::fprintf(stderr, "replay: %s: no such file or directory\n", arg.c_str());
            return 2;
        }
    }
    if (seeds.empty()) seeds.emplace_back();  // mutations of the empty input still run
    for (const auto& s : seeds) feed(s);
    std::mt19937 rng(20261207);
    for (long n = 0; n < mutations; ++n) {
        // Mutations stack: a few rounds on one seed reach further than one.
        Bytes b = seeds[n % static_cast<long>(seeds.size())];
        for (int round = 0, rounds = 1 + static_cast<int>(rng() % 4); round < rounds; ++round) b = mutate(std::move(b), rng);
        feed(b);
    }
    std::printf("replay: %zu seeds, %ld mutations, no failure\n", seeds.size(), mutations);
    return 0;
}
