#pragma once
// systemd-networkd drop-ins that tell networkd to leave kovs's interfaces
// alone: `<dir>/10-kovs-<name>.network` with `[Match] Name=<name>` and
// `[Link] Unmanaged=yes`. "10-" sorts before distribution and admin files, and
// networkd applies the first .network file that matches a link. This is
// defence in depth next to the GatewayGuard, never a replacement: networkd
// may be absent, reload late or be configured by someone else.
#include <string>
#include <vector>

namespace kovs::gateway {

class NetworkdDropins {
public:
    // `dir` defaults to networkd's runtime directory; tests point it into
    // their private mount namespace.
    explicit NetworkdDropins(std::string dir = "/run/systemd/network");

    // Writes one drop-in per interface (atomically: temp file + rename), and
    // creates `dir` if needed. Rejects names networkd or the kernel would not
    // accept before writing anything.
    void install(const std::vector<std::string>& interfaces) const;
    // Removes the drop-ins of these interfaces; missing files are fine.
    void remove(const std::vector<std::string>& interfaces) const;
    // The interfaces whose drop-in is missing or says something else: what
    // install() must write (the drop-in job's plan, and doctor's).
    std::vector<std::string> missing(const std::vector<std::string>& interfaces) const;
    // Files in the same directory that networkd applies to `interface` before
    // its drop-in (they sort first and a [Match] Name= glob matches it): with
    // one, networkd manages the interface whatever the drop-in says.
    std::vector<std::string> shadowing(const std::string& interface) const;

    const std::string& dir() const { return dir_; }
    std::string pathFor(const std::string& interface) const;
    static std::string contentFor(const std::string& interface);

private:
    void writeOne(const std::string& name) const;

    std::string dir_;
};

}  // namespace kovs::gateway
