#pragma once
// The addresses an interface holds now (rtnetlink), with their prefix
// lengths; IPv6 link-local ones left out. Empty when the interface does not
// exist. Throws kovs::Error when the kernel cannot be asked.
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs {

std::vector<IpPrefix> linkAddresses(const std::string& ifname);

}  // namespace kovs
