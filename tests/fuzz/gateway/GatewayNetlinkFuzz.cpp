// fuzz_gateway_netlink: the gateway guard's event filter walks every rtnetlink
// message of the receive buffer by hand (attributes, multipath next hops);
// whatever the bytes, it must stay inside them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <linux/netlink.h>

#include "base/NetlinkWatcher.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The kernel hands out 4-byte aligned buffers; an exact-size copy lets
    // ASan see any read past the end.
    if (size == 0) return 0;
    std::vector<uint32_t> storage((size + 3) / 4);
    std::memcpy(storage.data(), data, size);
    size_t left = size;
    auto* h = reinterpret_cast<const nlmsghdr*>(storage.data());
    for (int ifindex : {0, 7}) {
        left = size;
        h = reinterpret_cast<const nlmsghdr*>(storage.data());
        while (kovs::netlinkMessageFits(h, left)) {
            kovs::concernsInterface(h, {ifindex, "gw0", 0});
            h = kovs::nextNetlinkMessage(h, left);
        }
    }
    return 0;
}
