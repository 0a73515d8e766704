#pragma once
// `kovsctl doctor`: checks every failure mode kovs knows of on this node,
// directly against OVS, the kernel and the agent (so it still works when the
// agent is down), each with a one-line fix hint. Where a job has a planner,
// the check is that planner's dry run (a non-empty plan is the failure).
// docs/troubleshooting.md explains every check. The checks live by area:
// Doctor.cpp (agent, report), DoctorOvs.cpp, DoctorNode.cpp, DoctorPeers.cpp.
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/Config.hpp"
#include "ctl/DoctorCheck.hpp"
#include "offload/PodInterfaces.hpp"
#include "peers/Peer.hpp"

namespace kovs::ovs {
class OvsdbReplica;
}

namespace kovs::ctl {

class Doctor {
public:
    explicit Doctor(agent::Config config);

    std::vector<DoctorCheck> run();

private:
    void checkAgent(std::vector<DoctorCheck>& out);
    void checkOvs(std::vector<DoctorCheck>& out);
    void checkTxChecksum(std::vector<DoctorCheck>& out);
    void checkGateway(std::vector<DoctorCheck>& out);
    void checkPeers(std::vector<DoctorCheck>& out);
    void checkNetworkd(std::vector<DoctorCheck>& out);
    void checkSocketBuffers(std::vector<DoctorCheck>& out);
    void checkBridges(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out);
    void checkUplink(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out);
    void checkFlows(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out);
    void checkEgress(std::vector<DoctorCheck>& out);
    void checkFamilies(std::vector<DoctorCheck>& out);
    void checkRefusedPeers(std::vector<DoctorCheck>& out);
    // Where they came from in `origin`; none: `origin` says why. Asked once
    // per doctor run (with the agent down, the API may take kPeerListTimeout);
    // the flows, gateway, egress and peers checks share the answer.
    std::optional<peers::PeerSet> knownPeers(std::string& origin) const;
    std::optional<peers::PeerSet> loadPeers(std::string& origin) const;
    // How long doctor waits for the API's Node list when the agent does not answer.
    static constexpr std::chrono::milliseconds kPeerListTimeout{10'000};

    agent::Config config_;
    nlohmann::json agentStatus_;          // null when the agent did not answer
    std::vector<offload::PodInterface> pods_;  // on br-int, found as the offload guard finds them
    bool ovsReachable_ = false;
    struct KnownPeers {
        std::optional<peers::PeerSet> peers;
        std::string origin;
    };
    mutable std::optional<KnownPeers> knownPeers_;
};

std::string toString(DoctorCheck::Status s);
// The report as people read it; the exit status of kovsctl is non-zero when any check failed.
std::string formatReport(const std::vector<DoctorCheck>& checks);
nlohmann::json toJson(const std::vector<DoctorCheck>& checks);

}  // namespace kovs::ctl
