#pragma once
// One change to the node's kernel state, as data: the planner returns them,
// the applier (UplinkKernel) carries them out, tests and `doctor` read them.
// Every action means "make it so": one that finds its work done succeeds.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/RtnetlinkClient.hpp"
#include "uplink/UplinkRecord.hpp"

namespace kovs::uplink {

namespace step {
struct CreateVeth { std::string name, peer; unsigned mtu = 0; };  // both ends down
struct DeleteLink { std::string name; };
struct SetMtu { std::string link; unsigned mtu = 0; };
struct SetMac { std::string link, mac; };
struct SetUp { std::string link; bool up = true; };
struct Isolate { std::string link; };          // NOARP, no IPv6 (base/LinkIsolation)
struct TxChecksumOff { std::string link; };
struct SetNomaster { std::string link; };
struct AddRedirect { std::string from, to; };   // every frame arriving on `from` leaves through `to`
struct RemoveRedirect { std::string from; };
struct AddAddress { std::string link; AddressInfo address; };
struct DeleteAddress { std::string link; AddressInfo address; };
struct AddRoute { std::string link; RouteInfo route; };
struct DeleteRoute { std::string link; RouteInfo route; };
struct WriteRecord { UplinkRecord record; };
struct RemoveRecord {};
}  // namespace step

using UplinkAction = std::variant<step::CreateVeth, step::DeleteLink, step::SetMtu, step::SetMac, step::SetUp,
                                  step::Isolate, step::TxChecksumOff, step::SetNomaster, step::AddRedirect,
                                  step::RemoveRedirect, step::AddAddress, step::DeleteAddress, step::AddRoute,
                                  step::DeleteRoute, step::WriteRecord, step::RemoveRecord>;

// "move address 172.31.0.2/24 to br-phy", as logs and errors name a step.
std::string describe(const UplinkAction& a);

struct UplinkStep {
    UplinkAction action;
    std::optional<UplinkAction> undo;  // none: nothing to undo, or nothing that could be
};

struct UplinkPlan {
    std::vector<UplinkStep> steps;
    // Steps that must wait for OVS come later: what they wait for ("" none).
    std::string waitingFor;
    // The migration cannot go on at all (a foreign port in the way): why ("" none).
    std::string blocked;

    bool converged() const { return steps.empty() && waitingFor.empty() && blocked.empty(); }
    std::vector<std::string> describeSteps() const;
};

}  // namespace kovs::uplink
