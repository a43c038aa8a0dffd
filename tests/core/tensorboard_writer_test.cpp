#include "concord/core/tensorboard_writer.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "concord/core/crc32c.h"
#include "concord/core/tensorboard_reader.h"
#include "core/temp_dir.h"

namespace concord::core {
namespace {

namespace fs = std::filesystem;

class TensorBoardWriterTest : public test::TempDirTest {
 protected:
  TensorBoardWriterTest() : TempDirTest("concord_tensorboard_writer_test_") {}

  // Writes three scalars and returns the event file.
  fs::path write_sample() {
    TensorBoardWriter writer(dir_);
    writer.add_scalar("loss", 0.5, 1, 100.0);
    writer.add_scalar("loss", 0.25, 2, 101.0);
    writer.add_scalar("reward/mean", -3.0, 2, 101.5);
    return writer.path();
  }
};

TEST_F(TensorBoardWriterTest, NamesTheFileTheWayTensorBoardExpects) {
  TensorBoardWriter writer(dir_ / "nested" / "tb");
  const std::string name = writer.path().filename().string();
  EXPECT_EQ(writer.path().parent_path(), dir_ / "nested" / "tb");
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0U) << name;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_NE(name.find(std::string(".") + host), std::string::npos) << name;
  EXPECT_TRUE(fs::exists(writer.path()));
}

TEST_F(TensorBoardWriterTest, TwoWritersInOneDirectoryUseTwoFiles) {
  TensorBoardWriter first(dir_);
  TensorBoardWriter second(dir_);
  EXPECT_NE(first.path(), second.path());
}

TEST_F(TensorBoardWriterTest, FirstRecordIsTheFileVersion) {
  TensorBoardWriter writer(dir_);
  const std::vector<tensorboard::Event> events = read_event_file(writer.path());
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.5e9);
}

TEST_F(TensorBoardWriterTest, ScalarsReadBackWithTagsValuesStepsAndTimes) {
  const fs::path path = write_sample();
  const std::vector<tensorboard::Event> events = read_event_file(path);
  ASSERT_EQ(events.size(), 4U);
  struct Expected {
    const char* tag;
    float value;
    int64_t step;
    double wall_time;
  };
  const Expected expected[] = {{"loss", 0.5F, 1, 100.0}, {"loss", 0.25F, 2, 101.0}, {"reward/mean", -3.0F, 2, 101.5}};
  for (int i = 0; i < 3; ++i) {
    const tensorboard::Event& event = events[i + 1];
    ASSERT_TRUE(event.has_summary());
    ASSERT_EQ(event.summary().value_size(), 1);
    EXPECT_EQ(event.summary().value(0).tag(), expected[i].tag);
    EXPECT_EQ(event.summary().value(0).simple_value(), expected[i].value);
    EXPECT_EQ(event.step(), expected[i].step);
    EXPECT_EQ(event.wall_time(), expected[i].wall_time);
  }
}

TEST_F(TensorBoardWriterTest, EveryRecordIsFramedWithMaskedCrcs) {
  const std::string bytes = read_bytes(write_sample());
  std::size_t offset = 0;
  int records = 0;
  while (offset < bytes.size()) {
    ASSERT_LE(offset + 12, bytes.size());
    const uint64_t length = get_le(bytes, offset, 8);
    EXPECT_EQ(get_le(bytes, offset + 8, 4), masked_crc32c(bytes.data() + offset, 8));
    ASSERT_LE(offset + 12 + length + 4, bytes.size());
    EXPECT_EQ(get_le(bytes, offset + 12 + length, 4), masked_crc32c(bytes.data() + offset + 12, length));
    tensorboard::Event event;
    EXPECT_TRUE(event.ParseFromString(bytes.substr(offset + 12, length)));
    offset += 12 + length + 4;
    ++records;
  }
  EXPECT_EQ(offset, bytes.size());
  EXPECT_EQ(records, 4);
}

TEST_F(TensorBoardWriterTest, AddScalarsWritesOneEventWithEveryValue) {
  fs::path path;
  {
    TensorBoardWriter writer(dir_);
    writer.add_scalars({{"a", 1.0}, {"b", 2.0}}, 7, 5.0);
    writer.add_scalars({}, 8);  // nothing to write
    path = writer.path();
  }
  const std::vector<tensorboard::Event> events = read_event_file(path);
  ASSERT_EQ(events.size(), 2U);
  ASSERT_EQ(events[1].summary().value_size(), 2);
  EXPECT_EQ(events[1].summary().value(0).tag(), "a");
  EXPECT_EQ(events[1].summary().value(1).simple_value(), 2.0F);
  EXPECT_EQ(events[1].step(), 7);
}

TEST_F(TensorBoardWriterTest, DefaultWallTimeIsNow) {
  TensorBoardWriter writer(dir_);
  const double before = unix_time_now();
  writer.add_scalar("x", 1.0, 0);
  writer.flush();
  const double after = unix_time_now();
  const std::vector<tensorboard::Event> events = read_event_file(writer.path());
  ASSERT_EQ(events.size(), 2U);
  EXPECT_GE(events[1].wall_time(), before);
  EXPECT_LE(events[1].wall_time(), after);
}

TEST_F(TensorBoardWriterTest, FlushMakesRecordsVisibleWhileWriting) {
  TensorBoardWriter writer(dir_);
  writer.add_scalar("x", 1.0, 0);
  writer.flush();
  EXPECT_EQ(read_event_file(writer.path()).size(), 2U);
}

TEST_F(TensorBoardWriterTest, ConcurrentWritersProduceWholeRecords) {
  fs::path path;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  {
    TensorBoardWriter writer(dir_);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < kPerThread; ++i) {
          writer.add_scalar("thread" + std::to_string(t), i, i);
        }
      });
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
    path = writer.path();
  }
  const std::vector<tensorboard::Event> events = read_event_file(path);
  ASSERT_EQ(events.size(), 1U + kThreads * kPerThread);
  std::vector<int> next(kThreads, 0);
  for (std::size_t i = 1; i < events.size(); ++i) {
    const int thread = std::stoi(events[i].summary().value(0).tag().substr(6));
    EXPECT_EQ(events[i].step(), next[thread]++);  // each thread's records stay in order
  }
}

TEST_F(TensorBoardWriterTest, ReaderRejectsACorruptDataByte) {
  const fs::path path = write_sample();
  std::string bytes = read_bytes(path);
  const uint64_t first_length = get_le(bytes, 0, 8);
  const std::size_t second_record = 12 + first_length + 4;
  bytes[second_record + 12 + 2] ^= 0x01;
  write_bytes(path, bytes);
  try {
    read_event_file(path);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("data CRC"), std::string::npos) << message;
    EXPECT_NE(message.find("byte offset " + std::to_string(second_record)), std::string::npos) << message;
  }
}

TEST_F(TensorBoardWriterTest, ReaderRejectsACorruptLength) {
  const fs::path path = write_sample();
  std::string bytes = read_bytes(path);
  bytes[0] ^= 0x40;
  write_bytes(path, bytes);
  EXPECT_THROW(read_event_file(path), std::runtime_error);
}

TEST_F(TensorBoardWriterTest, ReaderRejectsEveryTruncation) {
  const fs::path path = write_sample();
  const std::string bytes = read_bytes(path);
  // Record boundaries are the only lengths that parse.
  std::vector<std::size_t> boundaries;
  for (std::size_t offset = 0; offset < bytes.size(); offset += 12 + get_le(bytes, offset, 8) + 4) {
    boundaries.push_back(offset);
  }
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    // A fresh name each time: rewriting one file in place makes ext4 flush it, which is slow.
    const fs::path cut = dir_ / ("cut" + std::to_string(size) + ".tfevents");
    write_bytes(cut, bytes.substr(0, size));
    const bool boundary = std::find(boundaries.begin(), boundaries.end(), size) != boundaries.end();
    if (boundary) {
      EXPECT_NO_THROW(read_event_file(cut)) << "size " << size;
    } else {
      try {
        read_event_file(cut);
        ADD_FAILURE() << "size " << size << " parsed";
      } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("byte offset"), std::string::npos) << error.what();
      }
    }
    fs::remove(cut);
  }
}

TEST_F(TensorBoardWriterTest, ReaderNamesAMissingFile) {
  const fs::path path = dir_ / "absent";
  try {
    read_event_file(path);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST_F(TensorBoardWriterTest, UncreatableDirectoryThrows) {
  write_bytes(dir_ / "plain_file", "x");
  EXPECT_THROW(TensorBoardWriter(dir_ / "plain_file" / "tb"), std::runtime_error);
}

}  // namespace
}  // namespace concord::core
