#pragma once
// One OpenFlow flow of br-int, typed. The stages of FlowTable and PolicyStage
// build these and they are rendered to ovs-ofctl's text in one place, here;
// nothing reads that text back (the diff to the installed table compares
// Flows, not lines). Tables, registers and conntrack mark bits have names:
// a stage never spells a table number, an NXM register or a mark literal.
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace kovs::flows {

// br-int's tables in pipeline order (FlowTable.hpp says what each does). A new
// stage is a new name: the numbers leave room between the stages.
enum class Table : uint8_t {
    Ingress = 0,
    PodNeighbour = 5,
    Conntrack = 10,
    ConntrackState = 20,
    PolicySources = 21,
    PolicyDestinations = 22,
    AdminEgress = 23,
    EgressPolicy = 24,
    BaselineEgress = 25,
    AdminIngress = 26,
    IngressPolicy = 27,
    BaselineIngress = 28,
    Commit = 29,
    Forward = 30,
    NeighbourReply = 31,
    FromTunnel = 40,
    TunnelDelivery = 41,
};
constexpr int number(Table t) { return static_cast<int>(t); }
// What table `table` does, in words ("L3 forwarding"); "" for a number this
// version does not write (a trace through another CNI's table).
const char* stageName(int table);

// Actions that go on in another table.
std::string gotoTable(Table t);  // "goto_table:30"
std::string resubmit(Table t);   // "resubmit(,31)"

// The registers, by what a stage keeps in them.
enum class Reg : uint8_t {
    Scratch = 0,          // a value held while two fields are swapped (the ARP reply)
    SourceSets = 1,       // reg1..reg7: the admin address sets a new connection's source is in, a bit each
    DestinationSets = 8,  // reg8..reg14: those its destination is in
};
constexpr int kSetRegisters = 7;  // of each of SourceSets and DestinationSets
std::string field(Reg r);         // "NXM_NX_REG0[]"
// Bit `bit` of the run of registers from `first`: "reg2=0x8/0x8".
std::string matchBit(Reg first, int bit);
// The `index`th register of the run from `first` loaded whole: "load:0x9->NXM_NX_REG2[]".
std::string loadRegister(Reg first, int index, uint32_t value);

// The bits of ct_mark, by what they say of a connection.
enum class CtMark : uint32_t {
    FromGateway = 0x1,  // it came out of the node's kernel (gw0): its replies go back there
};
std::string matchMark(CtMark m);  // "ct_mark=0x1/0x1"
std::string setMark(CtMark m);    // "set_field:0x1/0x1->ct_mark"

struct Flow {
    Table table = Table::Ingress;
    int priority = 0;
    uint64_t cookie = 0;
    std::string match;    // "" matches every packet
    std::string actions;

    // ovs-ofctl's flow syntax: "table=30,priority=100,cookie=0x6b01,ip,nw_dst=10.244.2.0/24 actions=...".
    std::string text() const;
    // What `delete_strict` names: table, priority and match.
    std::string strictKey() const;
    friend auto operator<=>(const Flow&, const Flow&) = default;
};

// Sorted (by table, priority, match, then the rest) and without repeats: the
// one order a table is kept, compared and written in.
void normalize(std::vector<Flow>& flows);
// One flow per line, in the order given.
std::string flowText(const std::vector<Flow>& flows);

}  // namespace kovs::flows
