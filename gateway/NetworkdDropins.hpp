#pragma once
// systemd-networkd drop-ins that tell networkd to leave kovs's interfaces
// alone: `<dir>/10-kovs-<stem>.network` with `[Match] Name=<match>` and
// `[Link] Unmanaged=yes`, one per interface (stem and match its name), or
// one for a family of them (the pods' host ends: `kovs[0-9a-f]*`). "10-" sorts before distribution and admin files, and
// networkd applies the first .network file that matches a link. This is
// defence in depth next to the GatewayGuard, never a replacement: networkd
// may be absent, reload late or be configured by someone else.
#include <string>
#include <vector>

namespace kovs::gateway {

// One drop-in: its file's stem and the interfaces it matches.
struct NetworkdLink {
    std::string stem;
    std::string match;    // networkd's Name= glob
    std::string example;  // an interface `match` covers (the match itself when it is a name)
    NetworkdLink(std::string name) : stem(name), match(name), example(std::move(name)) {}
    NetworkdLink(const char* name) : NetworkdLink(std::string(name)) {}
    NetworkdLink(std::string s, std::string m, std::string e) : stem(std::move(s)), match(std::move(m)), example(std::move(e)) {}
};

class NetworkdDropins {
public:
    // `dir` defaults to networkd's runtime directory; tests point it into
    // their private mount namespace.
    explicit NetworkdDropins(std::string dir = "/run/systemd/network");

    // Writes one drop-in per interface (atomically: temp file + rename), and
    // creates `dir` if needed. Rejects names networkd or the kernel would not
    // accept before writing anything.
    void install(const std::vector<NetworkdLink>& links) const;
    // Removes these drop-ins; missing files are fine.
    void remove(const std::vector<NetworkdLink>& links) const;
    // The drop-ins missing or saying something else: what install() must
    // write (the drop-in job's plan, and doctor's).
    std::vector<NetworkdLink> missing(const std::vector<NetworkdLink>& links) const;
    // Files in the same directory that networkd applies to the link before
    // its drop-in (they sort first and a [Match] Name= glob matches it): with
    // one, networkd manages the interface whatever the drop-in says.
    std::vector<std::string> shadowing(const NetworkdLink& link) const;

    const std::string& dir() const { return dir_; }
    std::string pathFor(const NetworkdLink& link) const;
    static std::string contentFor(const NetworkdLink& link);

private:
    void writeOne(const NetworkdLink& link) const;

    std::string dir_;
};

}  // namespace kovs::gateway
