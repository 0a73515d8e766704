#include "base/Ethtool.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"

namespace kovs {
namespace {

ifreq makeIfreq(const std::string& ifname, ethtool_value* ev) {
    checkInterfaceName("ethtool", ifname);
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
    ifr.ifr_data = reinterpret_cast<char*>(ev);
    return ifr;
}

}  // namespace

Ethtool::Ethtool() : sock_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    if (!sock_) throwErrno("ethtool: socket");
}

uint32_t Ethtool::get(const std::string& ifname, uint32_t cmd, const char* name) const {
    ethtool_value ev{};
    ev.cmd = cmd;
    ifreq ifr = makeIfreq(ifname, &ev);
    if (::ioctl(sock_.get(), SIOCETHTOOL, &ifr) < 0) throwErrno(std::string("ethtool ") + name + " " + ifname);
    return ev.data;
}

void Ethtool::set(const std::string& ifname, uint32_t cmd, uint32_t value, const char* name) const {
    ethtool_value ev{};
    ev.cmd = cmd;
    ev.data = value;
    ifreq ifr = makeIfreq(ifname, &ev);
    if (::ioctl(sock_.get(), SIOCETHTOOL, &ifr) < 0) {
        throwErrno(std::string("ethtool ") + name + " " + ifname + " " + std::to_string(value));
    }
}

bool Ethtool::txChecksum(const std::string& ifname) const { return get(ifname, ETHTOOL_GTXCSUM, "GTXCSUM") != 0; }
bool Ethtool::tso(const std::string& ifname) const { return get(ifname, ETHTOOL_GTSO, "GTSO") != 0; }
bool Ethtool::gso(const std::string& ifname) const { return get(ifname, ETHTOOL_GGSO, "GGSO") != 0; }

OffloadState Ethtool::state(const std::string& ifname) const {
    return {txChecksum(ifname), tso(ifname), gso(ifname)};
}

void Ethtool::setTxChecksum(const std::string& ifname, bool on) const {
    set(ifname, ETHTOOL_STXCSUM, on ? 1 : 0, "STXCSUM");
    if (txChecksum(ifname) != on) {
        throw Error("ethtool STXCSUM " + ifname + " " + (on ? "on" : "off") +
                    ": the device still reports tx-checksumming " + (on ? "off" : "on") + " after the write");
    }
}

bool Ethtool::ensureTxChecksumOff(const std::string& ifname) const {
    if (!txChecksum(ifname)) return false;
    setTxChecksum(ifname, false);
    return true;
}

}  // namespace kovs
