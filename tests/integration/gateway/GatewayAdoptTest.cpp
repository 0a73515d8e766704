// The gateway guard on another CNI's device (companion mode, issue 16,
// defect 5): no address configured, the guard keeps the ones that CNI gave
// its device (OVN-Kubernetes' management port holds .2 of the node subnet),
// restores them after a flush, never removes any, and leaves the MTU alone.
// A veth stands in for the device, as in GatewayGuardTest.
#include <gtest/gtest.h>

#include "base/Process.hpp"
#include "gateway/GatewayGuard.hpp"
#include "tests/integration/gateway/GatewayTestSupport.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using namespace std::chrono_literals;

namespace {

const std::string kDev = "ovn-k8s-mp0";

class GatewayAdoptTest : public ::testing::Test {
protected:
    void SetUp() override {
        runProcess({"ip", "link", "del", kDev});
        opt_.name = kDev;
        opt_.mtu = std::nullopt;  // the CNI's MTU
        opt_.adoptAddresses = true;
        opt_.serviceSysctls = false;  // as in companion mode
    }
    void TearDown() override {
        guard_.reset();
        runProcess({"ip", "link", "del", kDev});
    }
    // What ovnkube-node does to its management port.
    static void cniCreatesItsDevice() {
        runChecked({"ip", "link", "add", kDev, "mtu", "1400", "type", "veth", "peer", "name", "mp0-peer"});
        runChecked({"ip", "link", "set", "mp0-peer", "up"});
        runChecked({"ip", "link", "set", kDev, "up"});
    }
    static void cniAddresses(const std::string& cidr) { runChecked({"ip", "addr", "add", cidr, "dev", kDev}); }
    nlohmann::json status() {
        nlohmann::json s;
        guard_->onLoop([&](gateway::GatewayGuard& g) { g.status(s); });
        return s["gateway"];
    }
    bool guarding(const std::vector<std::string>& addrs) { return status()["addresses"] == nlohmann::json(addrs); }

    gateway::GatewayGuardOptions opt_;
    std::unique_ptr<GuardThread> guard_;
};

}  // namespace

TEST_F(GatewayAdoptTest, TheCnisAddressComesBackAfterAFlushAndItsMtuStays) {
    cniCreatesItsDevice();
    cniAddresses("10.244.1.2/24");
    guard_ = std::make_unique<GuardThread>(opt_);  // before the fix: "no gateway address configured"
    ASSERT_TRUE(pollUntil([&] { return guarding({"10.244.1.2/24"}); }, 5s)) << status().dump();
    EXPECT_EQ(status()["addressesFrom"], "device");
    runChecked({"ip", "addr", "flush", "dev", kDev});
    LinkView last;
    EXPECT_TRUE(pollUntil([&] {
        last = LinkView::read(kDev);
        return last.addresses == std::set<std::string>{"10.244.1.2/24"} && last.route("10.244.1.0/24");
    }, 2s, 1ms)) << "not restored: " << last.describe();
    EXPECT_EQ(last.mtu, 1400) << "the CNI's MTU is the CNI's";
    EXPECT_EQ(guard_->stats().mtuFixed, 0u);
    EXPECT_EQ(guard_->stats().sysctlsFixed, 0u) << "the CNI's sysctls are the CNI's";
    std::printf("[ gateway ] adopted address restored after a flush, guard's repair %.3f ms\n",
                guard_->stats().lastRestore.count() / 1e6);
}

TEST_F(GatewayAdoptTest, ADeviceMadeAfterTheAgentStartedIsGuardedOnceAddressed) {
    guard_ = std::make_unique<GuardThread>(opt_);
    EXPECT_TRUE(pollUntil([&] { return guard_->stats().reconciles >= 1; }, 2s));
    EXPECT_FALSE(guard_->stats().linkPresent) << "kovs never creates the other CNI's device";
    cniCreatesItsDevice();
    EXPECT_TRUE(pollUntil([&] { return guard_->stats().linkPresent; }, 2s));
    EXPECT_TRUE(status()["addresses"].empty()) << "nothing to keep before the CNI addressed it";
    cniAddresses("10.244.1.2/24");
    ASSERT_TRUE(pollUntil([&] { return guarding({"10.244.1.2/24"}); }, 2s)) << status().dump();
    runChecked({"ip", "addr", "flush", "dev", kDev});
    EXPECT_TRUE(pollUntil([&] { return LinkView::read(kDev).addresses == std::set<std::string>{"10.244.1.2/24"}; }, 2s, 1ms))
        << LinkView::read(kDev).describe();
}

TEST_F(GatewayAdoptTest, TheCniReaddressingItsDeviceIsNotFought) {
    cniCreatesItsDevice();
    cniAddresses("10.244.1.2/24");
    guard_ = std::make_unique<GuardThread>(opt_);
    ASSERT_TRUE(pollUntil([&] { return guarding({"10.244.1.2/24"}); }, 5s));
    // The CNI moves its device to another subnet (add the new one, drop the old one)
    // and gives it a second address: all of it stays as the CNI made it.
    cniAddresses("10.244.9.2/24");
    runChecked({"ip", "addr", "del", "10.244.1.2/24", "dev", kDev});
    cniAddresses("10.244.9.3/24");
    ASSERT_TRUE(pollUntil([&] { return guarding({"10.244.9.2/24", "10.244.9.3/24"}); }, 2s)) << status().dump();
    guard_->onLoop([](gateway::GatewayGuard& g) { g.reconcileNow(); });
    EXPECT_EQ(LinkView::read(kDev).addresses, (std::set<std::string>{"10.244.9.2/24", "10.244.9.3/24"}));
    EXPECT_EQ(guard_->stats().addressesRemoved, 0u);
    EXPECT_EQ(guard_->stats().addressesAdded, 0u);
}
