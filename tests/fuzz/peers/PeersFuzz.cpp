// fuzz_tunnel_peers: every untrusted text the tunnel module parses — the
// peer file, NodeList bodies, watch-stream lines, kubeconfigs, OVS show
// output, and the API server's HTTP responses (fed in pieces, as a socket
// hands them over). Each must either parse or throw kovs::Error; nothing else (no
// other exception type, no crash, no sanitizer report).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/Error.hpp"
#include "peers/PeerFile.hpp"
#include "kube/ApiPayload.hpp"
#include "kube/HttpResponseParser.hpp"
#include "kube/KubeConfig.hpp"
#include "peers/KubeNode.hpp"
#include "tunnel/OvsTunnelState.hpp"

using namespace kovs::kube;
using namespace kovs::peers;
using kovs::tunnel::parseOvsTunnelState;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        switch (data[0] % 6) {
            case 0: parsePeerFile(text, "fuzz"); break;
            case 1:  // a list, and every Node in it through the decoder
                for (const auto& item : parseListPayload(text, nodeFields()).items) {
                    try {
                        peerFromNode(item);
                    } catch (const kovs::Error&) {
                    }
                }
                break;
            case 2: {
                auto ev = parseWatchLine(text, nodeFields());
                objectKey(ev.object);
                peerFromNode(ev.object);
                break;
            }
            case 3: parseKubeconfig(text, "/tmp", "", "fuzz"); break;
            case 4: parseOvsTunnelState(text, text, "br-phy"); break;
            case 5: {
                HttpResponseParser p;
                size_t piece = 1 + data[0] / 6 % 16;
                for (size_t i = 0; i < text.size(); i += piece)
                    p.feed(std::string_view(text).substr(i, piece), [](std::string_view) { return true; });
                p.closeEndsBody();
                break;
            }
        }
    } catch (const kovs::Error&) {
    }
    return 0;
}
