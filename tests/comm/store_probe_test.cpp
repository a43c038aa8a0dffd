// The checked handshake a joining rank makes with the rendezvous store before c10d's client sees
// the address (comm/store_probe.h): a real store passes; a listener that sends garbage, answers
// too much, hangs up or never answers, and an address where nothing listens, are refused in one
// line naming the address, within the deadline.
#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/bad_store_listener.h"
#include "concord/comm/communicator.h"
#include "concord/comm/store_probe.h"
#include "hang_guard.h"

namespace concord::comm {
namespace {

using concord::test::Listener;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

std::string refusal(int port, milliseconds timeout, bool* timed_out = nullptr) {
  std::string message;
  concord::test::ends_within(seconds(60), "the store probe", [&] {
    try {
      probe_store("127.0.0.1", port, steady_clock::now() + timeout);
    } catch (const CommTimeout& error) {
      message = error.what();
      if (timed_out != nullptr) *timed_out = true;
    } catch (const CommError& error) {
      message = error.what();
    }
  });
  return message;
}

TEST(StoreProbe, ARealStorePasses) {
  c10d::TCPStoreOptions options;
  options.port = 0;
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = seconds(10);
  c10d::TCPStore store("127.0.0.1", options);
  store.set("concord/probe", std::vector<uint8_t>{1});
  EXPECT_EQ(refusal(store.getPort(), seconds(10)), "");
  // The store still serves after the probe hung up.
  EXPECT_EQ(store.get("concord/probe"), std::vector<uint8_t>{1});
}

TEST(StoreProbe, AListenerThatSendsGarbageIsNotAStore) {
  Listener listener(Listener::Mode::kGarbage);
  bool timed_out = false;
  const std::string message = refusal(listener.port(), seconds(10), &timed_out);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(message, "found no rendezvous store at 127.0.0.1:" + std::to_string(listener.port()) +
                         ": the service there answered a store query with 0xff (check MASTER_ADDR/MASTER_PORT)");
}

TEST(StoreProbe, AListenerThatAnswersMoreThanAStoreWouldIsNotAStore) {
  Listener listener(Listener::Mode::kReplyAndMore);
  EXPECT_THAT(refusal(listener.port(), seconds(10)),
              ::testing::HasSubstr("the service there sent more than the one-byte answer"));
}

TEST(StoreProbe, AListenerThatHangsUpIsNotAStore) {
  Listener listener(Listener::Mode::kHangUp);
  // Its close reaches the probe as an end of stream or, once the probe's query drew a reset, as
  // a failed send: either way the line names the address and what answered.
  EXPECT_THAT(
      refusal(listener.port(), seconds(10)),
      ::testing::AllOf(::testing::HasSubstr("127.0.0.1:" + std::to_string(listener.port())),
                       ::testing::AnyOf(::testing::HasSubstr("closed the connection instead of answering"),
                                        ::testing::HasSubstr("sending the service there a store query failed"))));
}

TEST(StoreProbe, AListenerThatNeverAnswersTimesOutNamingTheAddress) {
  Listener listener(Listener::Mode::kSilent);
  bool timed_out = false;
  const std::string message = refusal(listener.port(), milliseconds(300), &timed_out);
  EXPECT_TRUE(timed_out);
  EXPECT_THAT(message,
              ::testing::StartsWith("found no rendezvous store at 127.0.0.1:" + std::to_string(listener.port()) +
                                    ": a process there accepted the connection but did not answer a store "
                                    "query within "));
}

TEST(StoreProbe, NothingListeningTimesOutNamingTheAddress) {
  int port = 0;
  {
    Listener closed(Listener::Mode::kSilent);  // a port that was free a moment ago, closed again
    port = closed.port();
  }
  bool timed_out = false;
  const std::string message = refusal(port, milliseconds(300), &timed_out);
  EXPECT_TRUE(timed_out);
  EXPECT_THAT(message,
              ::testing::StartsWith("could not reach the rendezvous store at 127.0.0.1:" + std::to_string(port)));
}

}  // namespace
}  // namespace concord::comm
