// The chip-under-test protocol (docs/spec/dut-protocol.md): the codec and its limits, the
// vocabulary map's rules, addresses, and the harness side (DutBackend) against the chip side
// (serve_session) over a Unix socket, with a TEST-ONLY fake chip (fake_chip.h).
#include <algorithm>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <thread>

#include "fake_chip.h"
#include "lockstep/chip/error.hpp"
#include "lockstep/dut/conformance.h"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/dut/protocol.h"
#include "lockstep/dut/server.h"
#include "lockstep/dut/transport.h"
#include "lockstep/dut/vocab.h"
#include "lockstep/format/tokens.h"

namespace lockstep::dut {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// ------------------------------------------------------------------------------------ codec

chip::GuestImage sample_image() {
  chip::GuestImage im;
  im.entry = 0x10000;
  im.segments.push_back({0x10000, {0x13, 0, 0, 0, 0x73, 0, 0, 0}});
  im.segments.push_back({0x80000, {1, 2, 3}});
  im.sections[".lockstep.vreg"] = {9, 8, 7, 6};
  return im;
}

TEST(DutCodec, RoundTripsEveryMessage) {
  Hello h{1, "trace-v3", "secret"};
  const Hello h2 = decode_hello(encode_hello(h));
  EXPECT_EQ(h2.protocol_version, 1u);
  EXPECT_EQ(h2.trace_version, "trace-v3");
  EXPECT_EQ(h2.auth, "secret");

  HelloOk ok{1, "trace-v3", 20736, 64, kMultiStep | kHashCap, "name", "id"};
  const HelloOk ok2 = decode_hello_ok(encode_hello_ok(ok));
  EXPECT_EQ(ok2.vocab_size, 20736u);
  EXPECT_EQ(ok2.max_streams, 64u);
  EXPECT_EQ(ok2.capabilities, kMultiStep | kHashCap);
  EXPECT_EQ(ok2.identity, "id");

  const Reset r = decode_reset(encode_reset(5, sample_image()));
  EXPECT_EQ(r.stream, 5u);
  EXPECT_EQ(r.image.entry, 0x10000u);
  ASSERT_EQ(r.image.segments.size(), 2u);
  EXPECT_EQ(r.image.segments[1].address, 0x80000u);
  EXPECT_EQ(r.image.segments[1].bytes, (Bytes{1, 2, 3}));
  EXPECT_EQ(r.image.sections.at(".lockstep.vreg"), (Bytes{9, 8, 7, 6}));
  EXPECT_TRUE(r.repeated_section.empty());

  const std::vector<StepEntry> st{{0, 7}, {3, 20735}};
  const auto st2 = decode_step(encode_step(st));
  ASSERT_EQ(st2.size(), 2u);
  EXPECT_EQ(st2[1].stream, 3u);
  EXPECT_EQ(st2[1].input, 20735u);

  const std::vector<MultiEntry> fe{{0, 2, 0}, {1, 1, 0}};
  const std::vector<std::uint32_t> in{10, 11, 12};
  std::vector<MultiEntry> fe2;
  std::vector<std::uint32_t> in2;
  decode_forced(encode_forced(fe, in), fe2, in2);
  ASSERT_EQ(fe2.size(), 2u);
  EXPECT_EQ(fe2[0].count, 2u);
  EXPECT_EQ(in2, in);

  const std::vector<MultiEntry> fr{{2, 4096, 0}, {0, 1, 300}};
  const auto fr2 = decode_free(encode_free(fr));
  EXPECT_EQ(fr2[0].count, 4096u);
  EXPECT_EQ(fr2[1].first, 300u);

  const std::vector<std::uint32_t> toks{1, 2, 3, 0xFFFFFFFF};
  EXPECT_EQ(decode_tokens(encode_tokens(toks)), toks);

  chip::ProbeMap pm = testing::FakeChip().probe_map();
  const chip::ProbeMap pm2 = decode_probe_map(encode_probe_map(pm));
  ASSERT_EQ(pm2.fields.size(), 2u);
  EXPECT_EQ(pm2.fields[0].name, "next_kind");
  EXPECT_EQ(pm2.fields[0].width, 3u);
  ASSERT_EQ(pm2.fields[0].writers.size(), 1u);
  EXPECT_EQ(pm2.fields[0].writers[0].sublayer, chip::Sublayer::Mlp);
  ASSERT_EQ(pm2.points.size(), 2u);
  EXPECT_EQ(pm2.points[1].fields, (std::vector<std::string>{"next_kind", "in_kind"}));
  EXPECT_EQ(pm2.unembed_reads, (std::vector<std::string>{"next_kind"}));

  const ProbeRequest pr = decode_probe(encode_probe({1, -1, 0, "in_kind"}));
  EXPECT_EQ(pr.layer, -1);
  EXPECT_EQ(pr.field, "in_kind");
  EXPECT_EQ(decode_values(encode_values(std::vector<float>{1.5f, -2})), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(decode_blob(encode_blob(Bytes{4, 5})), (Bytes{4, 5}));
  const auto [rs, rb] = decode_restore(encode_restore(3, Bytes{6}));
  EXPECT_EQ(rs, 3u);
  EXPECT_EQ(rb, Bytes{6});
  const auto [code, msg] = decode_error(encode_error(4, "two\nlines"));
  EXPECT_EQ(code, 4u);
  EXPECT_EQ(msg, "two lines");
  EXPECT_EQ(decode_u64(encode_u64(0x0123456789ABCDEFull), "HASH_OK"), 0x0123456789ABCDEFull);
}

TEST(DutCodec, RejectsMalformedPayloads) {
  // Too short, bytes left over.
  EXPECT_THROW(decode_u32(Bytes{1, 0, 0}, "STREAMS"), Malformed);
  EXPECT_THROW(decode_u32(Bytes{1, 0, 0, 0, 0}, "STREAMS"), Malformed);
  // A count past its limit, or past the bytes there are, before anything is allocated.
  Writer w;
  w.u32(kMaxEntries + 1);
  EXPECT_THROW(decode_step(w.payload()), Malformed);
  Writer w2;
  w2.u32(1000).u32(0).u32(0);
  EXPECT_THROW(decode_step(w2.payload()), Malformed);
  // Σ count over 4,194,304.
  Writer w3;
  w3.u32(2).u32(0).u32(kMaxTotalSteps).u32(1).u32(1);
  std::vector<MultiEntry> e;
  std::vector<std::uint32_t> in;
  EXPECT_THROW(decode_forced(w3.payload(), e, in), Malformed);
  EXPECT_THROW(decode_free(encode_free(std::vector<MultiEntry>{{0, kMaxTotalSteps, 0}, {1, 1, 0}})), Malformed);
  // A str longer than 65,535 bytes, a blob longer than the frame.
  Writer w4;
  w4.u32(1).u32(kMaxStr + 1);
  EXPECT_THROW(decode_hello(w4.payload()), Malformed);
  Writer w5;
  w5.u32(0xFFFFFFFF);
  EXPECT_THROW(decode_blob(w5.payload()), Malformed);
  // Probe map: a field index out of range, a sublayer outside 0..2.
  Writer w6;
  w6.u32(0).u32(1).i32(0).u8(1).u32(1).u32(0).u32(0);
  EXPECT_THROW(decode_probe_map(w6.payload()), Malformed);
  Writer w7;
  w7.u32(1).str("f").u32(1).u32(1).i32(0).u8(3).u32(0).u32(0);
  EXPECT_THROW(decode_probe_map(w7.payload()), Malformed);
  // Unknown request types; a frame over the limit.
  EXPECT_THROW(decode_request(0x77, {}), Malformed);
  EXPECT_THROW(decode_response(kStep, kResponse | kReset, {}), Malformed);
  EXPECT_THROW(encode_frame(kStep, Bytes(kMaxPayload + 1)), std::length_error);
  // A repeated section name is reported, not merged silently.
  Writer w8;
  w8.u32(0).u64(0).u32(0).u32(2).str(".a").u32(0).str(".a").u32(0);
  EXPECT_EQ(decode_reset(w8.payload()).repeated_section, ".a");
}

// Timeouts name the request with the steps it asked for.
TEST(DutCodec, RequestTextNamesTheSteps) {
  const std::vector<StepEntry> step{{0, 5}, {1, 6}};
  EXPECT_EQ(request_text(kStep, encode_step(step)), "STEP of 2 steps (2 streams)");
  const std::vector<MultiEntry> forced{{0, 256, 0}};
  EXPECT_EQ(request_text(kForced, encode_forced(forced, std::vector<std::uint32_t>(256, 1))),
            "FORCED of 256 steps (1 stream)");
  const std::vector<MultiEntry> free{{0, 3, 0}, {2, 1, 0}};
  EXPECT_EQ(request_text(kFree, encode_free(free)), "FREE of 4 steps (2 streams)");
  EXPECT_EQ(request_text(kHash, encode_u32(0)), "HASH");
  EXPECT_EQ(request_text(kForced, {}), "FORCED");
}

TEST(DutCodec, TypeAndCapabilityNames) {
  EXPECT_EQ(type_name(kStep), "STEP");
  EXPECT_EQ(type_name(kResponse | kForced), "TOKENS (FORCED)");
  EXPECT_EQ(type_name(kError), "ERROR");
  EXPECT_EQ(type_name(0x1234), "type 0x1234");
  EXPECT_EQ(capability_names(0), "none");
  EXPECT_EQ(capability_names(kMultiStep | kSaveRestore), "MULTI_STEP, SAVE_RESTORE");
}

// ------------------------------------------------------------------------------------ vocab

// A map that shifts every spec id by `shift`, written with KIND(*) lines.
std::string shifted_map(std::uint32_t shift) {
  std::string text = "# shifted\nSTART " + std::to_string(shift) + "\n";
  for (const format::KindInfo& k : format::kinds()) {
    if (k.kind == 0) continue;
    text += std::string(k.name) + "(*)  " + std::to_string(256 * k.kind + shift) + "   # all payloads\n";
  }
  return text;
}

TEST(DutVocab, ProducibleTokensAreTheSpecsCount) {
  const auto t = producible_tokens();
  EXPECT_EQ(t.size(), 18785u);  // dut-protocol.md §6
  EXPECT_EQ(t.front(), 0u);
  for (std::uint32_t id : t) EXPECT_TRUE(format::is_valid_token(id)) << id;
}

// A map needs to name only the tokens trace-v3 produces: a chip whose output layer has exactly
// those has no id to spare for OIH(0), VMH(0) or a TRAP code no trap has (found by an outside
// tester: such a map was refused as "not mapped, the first OIH(0)"). It may name them.
TEST(DutVocab, AMapNamesOnlyTheTokensTraceV3Produces) {
  const auto required = required_tokens();
  EXPECT_EQ(required.size(), 18544u);  // dut-protocol.md §6: 18,785 less OIH(0), VMH(0), 239 TRAP codes
  std::string text;
  std::uint32_t next = 0;
  for (std::uint32_t t : required) text += format::token_name(t) + " " + std::to_string(next++) + "\n";
  const VocabMap m = VocabMap::parse(text, next, "exact.map");
  EXPECT_EQ(m.size(), required.size());
  EXPECT_EQ(m.to_spec(0), 0u);  // START
  const std::uint32_t oih0 = format::token_id(format::Kind::OIH, 0);
  EXPECT_EQ(std::find(required.begin(), required.end(), oih0), required.end());
  EXPECT_NE(std::find(required.begin(), required.end(), format::token_id(format::Kind::OIH, 1)), required.end());
  EXPECT_NE(std::find(required.begin(), required.end(), format::token_id(format::Kind::TRAP, 23)), required.end());
  EXPECT_EQ(std::find(required.begin(), required.end(), format::token_id(format::Kind::TRAP, 24)), required.end());
  // Without START it is refused, and the message names it.
  const std::string without = text.substr(text.find('\n') + 1);  // START dropped
  try {
    (void)VocabMap::parse(without, next, "short.map");
    ADD_FAILURE() << "a map without START was accepted";
  } catch (const VocabError& e) {
    EXPECT_NE(std::string(e.what()).find("1 token(s) trace-v3 can produce are not mapped, the first START"), std::string::npos)
        << e.what();
  }
}

TEST(DutVocab, IdentityAndShiftedMaps) {
  const VocabMap id = VocabMap::identity(20736);
  EXPECT_TRUE(id.is_identity());
  EXPECT_EQ(id.to_chip(300), 300u);
  EXPECT_EQ(id.to_spec(256 * 13 + 1), 256u * 13 + 1);
  // Below vocab_size, an id that is no token is a wrong prediction (a mismatch), not a fault:
  // BR(2) stays itself, an id beyond trace-v3's is marked unmapped; vocab_size and up is a fault.
  EXPECT_EQ(id.to_spec(256 * 13 + 2), 256u * 13 + 2);
  EXPECT_FALSE(id.to_spec(20736).has_value());
  const VocabMap wide = VocabMap::identity(30000);
  EXPECT_EQ(wide.to_spec(25000), format::kUnmappedChipId | 25000u);
  EXPECT_EQ(wide.to_chip(format::kUnmappedChipId | 25000u), 25000u);
  EXPECT_FALSE(wide.to_spec(30000).has_value());
  EXPECT_THROW(VocabMap::identity(20735), VocabError);

  const VocabMap m = VocabMap::parse(shifted_map(1000), 30000, "map");
  EXPECT_FALSE(m.is_identity());
  // the same map saved with a UTF-8 byte order mark and CRLF line ends, as some editors save it
  std::string crlf;
  for (const char ch : shifted_map(1000)) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  const VocabMap bom = VocabMap::parse("\xEF\xBB\xBF" + crlf, 30000, "bom.map");
  EXPECT_EQ(bom.size(), m.size());
  EXPECT_EQ(bom.to_chip(0), 1000u);
  EXPECT_EQ(bom.to_chip(256 * 13 + 1), 256u * 13 + 1 + 1000);
  EXPECT_EQ(m.size(), 18785u);
  EXPECT_EQ(m.to_chip(0), 1000u);
  EXPECT_EQ(m.to_chip(256 * 13 + 1), 256u * 13 + 1 + 1000);
  EXPECT_EQ(m.to_spec(1000), 0u);
  EXPECT_EQ(m.to_spec(999), format::kUnmappedChipId | 999u);
  EXPECT_EQ(m.to_chip(format::kUnmappedChipId | 999u), 999u);
  EXPECT_FALSE(m.to_spec(30000).has_value());
  EXPECT_EQ(format::token_name(format::kUnmappedChipId | 999u), "unmapped chip id 999");
}

TEST(DutVocab, EveryRuleIsCheckedWithItsLine) {
  auto error_of = [](const std::string& text, std::uint32_t vocab = 30000) -> std::string {
    try {
      VocabMap::parse(text, vocab, "m.txt");
    } catch (const VocabError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string good = shifted_map(0);
  EXPECT_EQ(error_of(good), "accepted");
  // A token named twice.
  EXPECT_NE(error_of(good + "BR(1) 25000\n").find("BR(1) is mapped twice"), std::string::npos);
  // Two tokens on one id.
  std::string dup_id = good;
  dup_id.replace(dup_id.find("START 0"), 7, "START 256");  // W0(0x00) has 256
  EXPECT_NE(error_of(dup_id).find("id 256 is given to both START and W0(0x00)"), std::string::npos);
  // A token the spec cannot produce; an unknown kind; a malformed line; an id beyond the vocab.
  EXPECT_NE(error_of(good + "BR(2) 25000\n").find("not a token trace-v3 can produce"), std::string::npos);
  EXPECT_NE(error_of(good + "XYZ(0) 25000\n").find("'XYZ' is not a kind"), std::string::npos);
  EXPECT_NE(error_of(good + "BR(1)\n").find(":" + std::to_string(83) + ": expected 'TOKEN ID'"), std::string::npos);
  // (a KIND(*) range is checked whole, before any of its ids: found by an outside tester, a range
  // running past vocab_size was reported as a collision inside it)
  EXPECT_NE(error_of(good, 20000).find("run past the chip's vocab_size 20000"), std::string::npos) << error_of(good, 20000);
  // A line's bytes outside printable ASCII are quoted as \xNN, never raw.
  EXPECT_NE(error_of(good + "\xff\xfe 3\n").find(": '\\xff\\xfe' is not START, KIND(PAYLOAD) or KIND(*)"),
            std::string::npos)
      << error_of(good + "\xff\xfe 3\n");
  // A producible token missing.
  std::string missing = good;
  missing.replace(missing.find("DQ(*)"), 5, "DQ(0)");
  EXPECT_NE(error_of(missing).find("63 token(s) trace-v3 can produce are not mapped, the first DQ(1)"), std::string::npos);
}

// ------------------------------------------------------------------------------------ addresses

TEST(DutTransport, Addresses) {
  const Address u = parse_address("unix:/tmp/x.sock");
  EXPECT_EQ(u.kind, Address::Kind::kUnix);
  EXPECT_EQ(u.path, "/tmp/x.sock");
  EXPECT_TRUE(u.local());
  const Address t = parse_address("tcp:127.0.0.1:7000");
  EXPECT_EQ(t.port, 7000);
  EXPECT_TRUE(t.local());
  EXPECT_FALSE(parse_address("tcp:10.1.2.3:7000").local());
  EXPECT_FALSE(parse_address("tcp:0.0.0.0:7000").local());
  EXPECT_THROW(parse_address("tcp:127.0.0.1"), std::invalid_argument);
  EXPECT_THROW(parse_address("tcp:127.0.0.1:70000"), std::invalid_argument);
  EXPECT_THROW(parse_address("http://x"), std::invalid_argument);
  EXPECT_THROW(parse_address("unix:"), std::invalid_argument);
  EXPECT_THROW(parse_address("unix:" + std::string(200, 'a')), std::invalid_argument);
  // Digits and dots are an IPv4 address, and must be a valid one (never a name to look up, nor
  // "reachable from other machines").
  for (const char* bad : {"tcp:999.1.1.1:7000", "tcp:1.2.3:7000", "tcp:1.2.3.4.5:7000", "tcp:256.0.0.1:7000"}) {
    try {
      parse_address(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("is not an IPv4 address"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_address("tcp:chip-host:7000").host, "chip-host");
  // IPv6 in brackets (before: "[::1]" was looked up as a host name, and called remote).
  const Address v6 = parse_address("tcp:[::1]:7000");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7000);
  EXPECT_TRUE(v6.local());
  EXPECT_EQ(v6.to_string(), "tcp:[::1]:7000");
  EXPECT_TRUE(parse_address("tcp:[::ffff:127.0.0.1]:7000").local());
  EXPECT_FALSE(parse_address("tcp:[::]:7000").local());
  EXPECT_FALSE(parse_address("tcp:[fe80::1]:7000").local());
  for (const char* bad : {"tcp:::1:7000", "tcp:[::1:7000", "tcp:[nope]:7000", "tcp:[]:7000"}) {
    EXPECT_THROW(parse_address(bad), std::invalid_argument) << bad;
  }
}

// A session over IPv6 loopback, when the machine has it: the listener's port and the connection.
TEST(DutTransport, IPv6Loopback) {
  std::optional<Listener> l;
  try {
    l.emplace(parse_address("tcp:[::1]:0"));
  } catch (const TransportError& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  ASSERT_NE(l->address().port, 0);
  EXPECT_EQ(l->address().to_string().rfind("tcp:[::1]:", 0), 0u);
  std::unique_ptr<Connection> server;
  std::thread t([&] { server = l->accept(); });
  const std::unique_ptr<Connection> client = connect_chip(l->address(), std::chrono::seconds(5));
  t.join();
  ASSERT_TRUE(server);
  const auto deadline = Connection::Clock::now() + std::chrono::seconds(5);
  const std::vector<std::uint8_t> payload = {1, 2, 3};
  client->write_frame(7, payload, deadline);
  const std::optional<Frame> f = server->read_frame(deadline);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, 7u);
  EXPECT_EQ(f->payload, payload);
}

// ------------------------------------------------------------------------------------ sessions

// A chip-server of FakeChips on a Unix socket in a thread, serving sessions until destroyed.
class FakeServer {
 public:
  explicit FakeServer(std::uint32_t shift = 0, std::uint32_t max_streams = 64, std::string auth = "",
                      bool nondeterministic = false)
      : dir_(fs::temp_directory_path() / ("lockstep-dut-test-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(counter_++))) {
    fs::create_directories(dir_);
    address_ = "unix:" + (dir_ / "chip.sock").string();
    listener_ = std::make_unique<Listener>(parse_address(address_));
    ServerOptions o;
    o.max_streams = max_streams;
    o.auth = std::move(auth);
    thread_ = std::thread([this, shift, o, nondeterministic] {
      const std::function<std::unique_ptr<chip::ChipBackend>()> make = [shift, nondeterministic] {
        return std::make_unique<testing::FakeChip>(shift, nondeterministic);
      };
      // A session per connection, concurrently (as lockstep chip-server serves them).
      std::vector<std::thread> sessions;
      while (auto c = listener_->accept(&stop_)) {
        sessions.emplace_back([c = std::shared_ptr<Connection>(std::move(c)), make, o] {
          try {
            serve_session(*c, make, o);
          } catch (const std::exception&) {
          }
        });
      }
      for (std::thread& t : sessions) t.join();
    });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    listener_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  DutConfig config(const fs::path& vocab = {}) const {
    DutConfig c;
    c.connect = address_;
    c.vocab = vocab;
    c.timeout_s = 30;
    return c;
  }
  const fs::path& dir() const { return dir_; }

 private:
  static inline std::atomic<int> counter_{0};
  fs::path dir_;
  std::string address_;
  std::unique_ptr<Listener> listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(DutSession, BackendMatchesTheChipInProcess) {
  FakeServer server;
  DutBackend b(server.config());
  EXPECT_EQ(b.hello().max_streams, 64u);
  EXPECT_EQ(b.identity(), "fake-0");
  const chip::Capabilities caps = b.capabilities();
  EXPECT_TRUE(caps.multi_step && caps.probes && caps.hash && caps.save_restore);
  EXPECT_FALSE(caps.audit);

  testing::FakeChip local;
  b.set_num_streams(3);
  local.set_num_streams(3);
  chip::GuestImage other = sample_image();
  other.entry = 0x10004;
  for (chip::StreamId s = 0; s < 3; ++s) {
    b.reset(s, s == 1 ? other : sample_image());
    local.reset(s, s == 1 ? other : sample_image());
  }
  // Teacher-forced over more than one frame per stream (4,096 steps a frame), ragged.
  const std::vector<chip::StreamId> sids{2, 0, 1};
  const std::vector<std::uint32_t> counts{5000, 3, 4097};
  std::vector<chip::Token> in;
  for (std::uint32_t c : counts)
    for (std::uint32_t k = 0; k < c; ++k) in.push_back(producible_tokens()[(k * 7919u) % 18785u]);
  std::vector<chip::Token> got(in.size()), want(in.size());
  b.teacher_forced_batch(sids, counts, in, got);
  local.teacher_forced_batch(sids, counts, in, want);
  EXPECT_EQ(got, want);
  EXPECT_EQ(b.steps(2), 5000u);
  EXPECT_EQ(b.hash(0), local.hash(0));
  // Free-running: one call of 4,100 steps against the chip fed its own tokens one by one.
  const std::vector<chip::Token> free_got = b.free_running(1, 0, 4100);
  const std::vector<chip::Token> free_want = local.free_running(1, 0, 4100);
  EXPECT_EQ(free_got, free_want);
  // Save on one stream, restore into another: the same continuation.
  const auto blob = b.save(0);
  const auto a = b.teacher_forced(0, std::vector<chip::Token>{1, 2, 3});
  b.restore(2, blob);
  EXPECT_EQ(b.steps(2), b.steps(0) - 3);
  EXPECT_EQ(b.teacher_forced(2, std::vector<chip::Token>{1, 2, 3}), a);
  EXPECT_THROW(b.restore(2, Bytes{1, 2, 3}), chip::FormatError);
  // Probes.
  const chip::ProbeMap pm = b.probe_map();
  ASSERT_EQ(pm.points.size(), 2u);
  b.set_probe_recording(true);
  b.step(0, 5);
  EXPECT_EQ(b.probe(0, 0, chip::Sublayer::Mlp, "next_kind"), (std::vector<float>{1, 0, 0}));
  b.set_probe_recording(false);
  EXPECT_TRUE(b.fault().empty());
}

TEST(DutSession, VocabularyMapTranslatesBothWays) {
  FakeServer server(/*shift=*/1000);
  const fs::path map = server.dir() / "vocab.txt";
  std::ofstream(map) << shifted_map(1000);
  DutBackend b(server.config(map));
  testing::FakeChip local(1000);
  b.set_num_streams(1);
  local.set_num_streams(1);
  b.reset(0, sample_image());
  local.reset(0, sample_image());
  for (int k = 0; k < 50; ++k) {
    const chip::Token spec_in = producible_tokens()[static_cast<std::size_t>(k) * 31];
    const chip::Token got = b.step(0, spec_in);
    const chip::Token want = local.step(0, spec_in + 1000);
    EXPECT_EQ(got + 1000, want) << "step " << k;
    // A report names the chip's own id of a token (its logit), as the map gives it.
    EXPECT_EQ(b.own_token_id(spec_in), spec_in + 1000) << "step " << k;
  }
  EXPECT_EQ(b.own_token_id(format::kUnmappedChipId | 500), 500u);
  // The top of the map: the chip's id is above the spec's vocabulary size.
  const chip::Token last = producible_tokens().back();
  EXPECT_EQ(b.own_token_id(last), last + 1000);
  EXPECT_GE(last + 1000, format::vocab_size());  // an id the map leaves free is itself
  // Without the map, the shifted chip's ids are not trace-v3's: below its vocab_size they are
  // wrong predictions (the engine's mismatches), the ones beyond trace-v3's ids marked unmapped;
  // none is a fault.
  DutBackend raw(server.config());
  EXPECT_FALSE(raw.own_token_id(producible_tokens()[5]).has_value());  // the default map: the spec's ids
  raw.set_num_streams(1);
  raw.reset(0, sample_image());
  bool unmapped = false;
  for (int k = 0; k < 200 && !unmapped; ++k) {
    const chip::Token t = raw.step(0, 0);
    unmapped = (t & format::kUnmappedChipId) != 0;
    if (unmapped) {
      EXPECT_GE(t & ~format::kUnmappedChipId, format::vocab_size());
    }
  }
  EXPECT_TRUE(unmapped);
  EXPECT_TRUE(raw.fault().empty()) << raw.fault();
}

TEST(DutSession, ChipSideAnswersBadRequestsAndGoesOn) {
  FakeServer server(0, 4);
  auto conn = open_connection(server.config());
  auto ask = [&](std::uint32_t type, const Bytes& p) {
    const auto until = Connection::Clock::now() + std::chrono::seconds(10);
    conn->write_frame(type, p, until);
    auto f = conn->read_frame(until);
    EXPECT_TRUE(f.has_value());
    return f.value_or(Frame{});
  };
  auto code_of = [](const Frame& f) { return f.type == kError ? decode_error(f.payload).first : 0u; };
  EXPECT_EQ(code_of(ask(kStreams, encode_u32(1))), kMalformed);  // before HELLO
  Hello h;
  h.trace_version = "trace-v2";
  EXPECT_EQ(code_of(ask(kHello, encode_hello(h))), kBadVersion);
  const Frame ok = ask(kHello, encode_hello(Hello{}));
  ASSERT_EQ(ok.type, kResponse | kHello);
  EXPECT_EQ(decode_hello_ok(ok.payload).max_streams, 4u);
  EXPECT_EQ(code_of(ask(kHello, encode_hello(Hello{}))), kMalformed);  // a second HELLO
  EXPECT_EQ(code_of(ask(kStreams, encode_u32(5))), kBadArgument);      // over max_streams
  EXPECT_EQ(ask(kStreams, encode_u32(2)).type, kResponse | kStreams);
  const StepEntry e0{0, 0};
  EXPECT_EQ(code_of(ask(kStep, encode_step(std::span<const StepEntry>(&e0, 1)))), kBadArgument);  // not reset
  EXPECT_EQ(ask(kReset, encode_reset(0, sample_image())).type, kResponse | kReset);
  const std::vector<StepEntry> twice{{0, 0}, {0, 0}};
  EXPECT_EQ(code_of(ask(kStep, encode_step(twice))), kBadArgument);
  const StepEntry big{0, 20736};
  EXPECT_EQ(code_of(ask(kStep, encode_step(std::span<const StepEntry>(&big, 1)))), kBadArgument);
  EXPECT_EQ(code_of(ask(kFree, encode_free(std::vector<MultiEntry>{{0, 0, 0}}))), kBadArgument);  // count 0
  chip::GuestImage needs = sample_image();
  needs.sections[".needs-missing"] = {};
  EXPECT_EQ(code_of(ask(kReset, encode_reset(1, needs))), kBadImage);
  EXPECT_EQ(code_of(ask(kRestore, encode_restore(0, Bytes{1}))), kBadImage);
  EXPECT_EQ(code_of(ask(0x77, {})), kMalformed);
  const Frame t = ask(kStep, encode_step(std::span<const StepEntry>(&e0, 1)));  // still serving
  ASSERT_EQ(t.type, kResponse | kStep);
  EXPECT_EQ(decode_tokens(t.payload).size(), 1u);
  EXPECT_EQ(ask(kBye, {}).type, kResponse | kBye);
}

TEST(DutSession, AuthenticationIsChecked) {
  FakeServer server(0, 8, "s3cret");
  const fs::path tok = server.dir() / "token";
  std::ofstream(tok) << "s3cret\n";
  DutConfig good = server.config();
  good.token_file = tok;
  EXPECT_NO_THROW(DutBackend b(good));
  try {
    DutBackend b(server.config());
    FAIL() << "accepted without the secret";
  } catch (const DutError& e) {
    EXPECT_NE(std::string(e.what()).find("ERROR 5 (authentication failed)"), std::string::npos) << e.what();
  }
}

// `n` guests g0.. whose golden tokens are the fake chip's own (it computes no machine): guest g
// has `steps + g * more` tokens, each step fed the one before (teacher-forced on its own tokens,
// so free-running and forced agree).
std::vector<ConformanceGuest> fake_chip_guests(int n, int steps, int more) {
  std::vector<ConformanceGuest> guests;
  for (int g = 0; g < n; ++g) {
    chip::GuestImage im = sample_image();
    im.entry += 4 * static_cast<std::uint64_t>(g);
    testing::FakeChip f;
    f.set_num_streams(1);
    f.reset(0, im);
    std::vector<std::uint32_t> tokens;
    chip::Token in = 0;
    for (int k = 0; k < steps + more * g; ++k) tokens.push_back(in = f.step(0, in));
    guests.push_back({"g" + std::to_string(g), im, tokens});
  }
  return guests;
}

TEST(DutSession, ConformanceChecksPassOnACorrectAdapter) {
  FakeServer server;
  const std::vector<ConformanceGuest> guests = fake_chip_guests(3, 40, 10);
  const auto lines = run_conformance(server.config(), guests, {});
  std::size_t pass = 0;
  for (const CheckLine& l : lines) {
    EXPECT_EQ(l.verdict, CheckLine::Verdict::kPass) << l.to_string();
    pass += l.verdict == CheckLine::Verdict::kPass;
  }
  EXPECT_EQ(pass, 22u);
}

// A chip with fewer streams than dut-check's guests (max_streams 1, natural on a GPU): the
// ragged FORCED and FREE frames hold only the streams it has. They read past its streams before
// (an outside tester: a correct chip failed with a garbled token count, then std::bad_alloc).
TEST(DutSession, ConformancePassesAChipWithFewerStreamsThanGuests) {
  for (const std::uint32_t streams : {1u, 2u}) {
    FakeServer server(0, streams);
    const auto lines = run_conformance(server.config(), fake_chip_guests(3, 40, 10), {});
    std::size_t pass = 0, skip = 0;
    for (const CheckLine& l : lines) {
      EXPECT_NE(l.verdict, CheckLine::Verdict::kFail) << streams << ": " << l.to_string();
      pass += l.verdict == CheckLine::Verdict::kPass;
      skip += l.verdict == CheckLine::Verdict::kSkip;
      if (l.name.rfind("FORCED", 0) == 0 || l.name.rfind("FREE", 0) == 0) {
        EXPECT_EQ(l.verdict, CheckLine::Verdict::kPass) << l.to_string();
        EXPECT_NE(l.detail.find(streams == 1 ? std::string(" of 1 entry") : " of " + std::to_string(streams) + " ragged entries"),
                  std::string::npos)
            << l.detail;
      }
    }
    EXPECT_EQ(pass + skip, 22u);
    EXPECT_EQ(skip, streams == 1 ? 2u : 0u);  // batch of streams and stream order need two (state hash does not)
  }
}

// A single --guest runs twice (the batch checks need two streams); the golden-model check counts
// its tokens once.
TEST(DutSession, ConformanceCountsACopiedGuestOnce) {
  FakeServer server;
  std::vector<ConformanceGuest> guests = fake_chip_guests(1, 40, 0);
  guests.push_back(guests.front());
  guests.back().copy = true;
  for (const CheckLine& l : run_conformance(server.config(), guests, {})) {
    if (l.name == "golden model (teacher-forced)") {
      EXPECT_EQ(l.detail, "40 of 40 tokens agree");
    }
    if (l.name == "reset and single steps") {
      EXPECT_EQ(l.detail.rfind("1 guest (and a second run of it), 80 steps", 0), 0u) << l.detail;
    }
  }
}

// After the determinism check fails, every later check that compares tokens with the first run
// says it is not conclusive (it used to read as a batching, order, FORCED and FREE bug each).
TEST(DutSession, ConformanceAfterNondeterminismIsNotConclusive) {
  FakeServer server(0, 64, "", /*nondeterministic=*/true);
  const auto lines = run_conformance(server.config(), fake_chip_guests(3, 200, 10), {});
  bool determinism_failed = false;
  std::size_t inconclusive = 0;
  for (const CheckLine& l : lines) {
    if (l.name == "determinism") {
      determinism_failed = l.verdict == CheckLine::Verdict::kFail;
      continue;
    }
    if (!determinism_failed || l.verdict != CheckLine::Verdict::kFail) continue;
    EXPECT_EQ(l.detail.rfind("not conclusive, the chip is not deterministic (see determinism): ", 0), 0u) << l.to_string();
    ++inconclusive;
  }
  EXPECT_TRUE(determinism_failed);
  EXPECT_GT(inconclusive, 0u);
}

// dut-check's probes check asks the judge about the first step, which the chip predicted right,
// and fails with the judge's reason.
TEST(DutSession, ConformanceProbesCheckFailsWhatTheJudgeRejects) {
  FakeServer server;
  const std::vector<ConformanceGuest> guests = fake_chip_guests(2, 20, 0);
  std::vector<std::pair<chip::Token, chip::Token>> asked;
  const auto lines = run_conformance(server.config(), guests, {},
                                     [&](const chip::ChipBackend&, chip::StreamId, chip::Token in, chip::Token next) {
                                       asked.emplace_back(in, next);
                                       return std::string("field in_kind disagrees");
                                     });
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].first, 0u);  // START
  EXPECT_EQ(asked[0].second, guests[0].tokens[0]);
  std::size_t failed = 0;
  for (const CheckLine& l : lines) {
    if (l.verdict != CheckLine::Verdict::kFail) continue;
    ++failed;
    EXPECT_EQ(l.name, "probes");
    EXPECT_EQ(l.detail, "the probes of g0's first step, which the chip predicted right, disagree with its tokens: field "
                        "in_kind disagrees (a run would blame a layer on them)");
  }
  EXPECT_EQ(failed, 1u);
}

TEST(DutSession, UnreachableChipIsOneLine) {
  DutConfig c;
  c.connect = "unix:/nonexistent-dir/chip.sock";
  try {
    DutBackend b(c);
    FAIL();
  } catch (const DutError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("chip under test: cannot connect to the chip at unix:/nonexistent-dir/chip.sock", 0), 0u)
        << e.what();
  }
  DutConfig s;
  s.command = "sh -c 'exit 3'";
  try {
    DutBackend b(s);
    FAIL();
  } catch (const DutError& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
  }
}

// --listen unix:PATH replaces only a stale socket: a file or a folder at PATH is the user's and
// is refused, and left as it was (an outside tester's regular file was deleted).
TEST(DutSession, ListeningNeverRemovesAFileThatIsNotASocket) {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-dut-listen-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "folder");
  std::ofstream(dir / "file.txt") << "precious\n";
  for (const char* name : {"file.txt", "folder"}) {
    SCOPED_TRACE(name);
    try {
      Listener l(parse_address("unix:" + (dir / name).string()));
      ADD_FAILURE() << "listened on " << name;
    } catch (const TransportError& e) {
      EXPECT_NE(std::string(e.what()).find("the path exists and is not a socket"), std::string::npos) << e.what();
    }
  }
  std::ifstream in(dir / "file.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "precious");
  EXPECT_TRUE(fs::is_directory(dir / "folder"));
  // A stale socket (its server gone) is replaced.
  const std::string sock = "unix:" + (dir / "s").string();
  { Listener first(parse_address(sock)); }  // removes its socket on exit; leave one behind instead:
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strcpy(sa.sun_path, (dir / "s").c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ::close(fd);  // bound, never listening: a stale socket file
  ASSERT_TRUE(fs::is_socket(dir / "s"));
  EXPECT_NO_THROW(Listener again(parse_address(sock)));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::dut
