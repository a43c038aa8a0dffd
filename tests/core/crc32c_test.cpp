#include "concord/core/crc32c.h"

#include <array>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283U);
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283U);
}

TEST(Crc32cTest, EmptyInputIsZero) { EXPECT_EQ(crc32c(nullptr, 0), 0U); }

// The iSCSI test vectors of RFC 3720, appendix B.4.
TEST(Crc32cTest, MatchesRfc3720Vectors) {
  std::array<unsigned char, 32> bytes{};
  EXPECT_EQ(crc32c(bytes.data(), bytes.size()), 0x8A9136AAU);
  bytes.fill(0xFF);
  EXPECT_EQ(crc32c(bytes.data(), bytes.size()), 0x62A8AB43U);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<unsigned char>(i);
  }
  EXPECT_EQ(crc32c(bytes.data(), bytes.size()), 0x46DD794EU);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(crc32c(bytes.data(), bytes.size()), 0x113FDB5CU);
}

TEST(Crc32cTest, MaskRotatesAndAddsTensorFlowsDelta) {
  EXPECT_EQ(mask_crc32c(0), 0xa282ead8U);
  EXPECT_EQ(mask_crc32c(0xE3069283U), 0xC78AB0E5U);
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5U);
}

TEST(Crc32cTest, MaskedCrcOfALittleEndianLength) {
  // The length prefix of a 24-byte TFRecord: eight bytes 18 00 00 00 00 00 00 00.
  const std::array<unsigned char, 8> length{24, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(masked_crc32c(length.data(), length.size()), 0x224B7FA3U);
}

}  // namespace
}  // namespace concord::core
