#include "concord/core/torch_archive.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/serialize/input-archive.h>

#include "concord/core/little_endian.h"

namespace concord::core {
namespace {

class BytesReader : public caffe2::serialize::ReadAdapterInterface {
 public:
  BytesReader(const char* data, std::size_t size) : data_(data), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = std::min<size_t>(n, size_ - pos);
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  std::size_t size_;
};

[[noreturn]] void refuse(const std::string& problem) { throw std::runtime_error(problem); }

c10::TypePtr refuse_type_annotation(const std::string& annotation) {
  refuse("unexpected type annotation '" + annotation.substr(0, 80) + "'");
}

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The class names LibTorch gives the modules of an OutputArchive: __torch__.Module, and
// __torch__.___torch_mangle_<n>.Module for the nested ones.
bool is_module_class(std::string_view name) {
  constexpr std::string_view kRoot = "__torch__.Module";
  constexpr std::string_view kMangled = "__torch__.___torch_mangle_";
  constexpr std::string_view kSuffix = ".Module";
  if (name == kRoot) return true;
  if (name.substr(0, kMangled.size()) != kMangled || name.size() <= kMangled.size() + kSuffix.size()) return false;
  if (name.substr(name.size() - kSuffix.size()) != kSuffix) return false;
  return is_digits(name.substr(kMangled.size(), name.size() - kMangled.size() - kSuffix.size()));
}

// Whether every element the tensor's sizes and strides reach lies inside its storage.
bool fits_its_storage(const at::Tensor& tensor) {
  if (tensor.layout() != at::kStrided || tensor.is_quantized() || !tensor.has_storage()) return false;
  int64_t last = tensor.storage_offset();
  if (last < 0) return false;
  bool empty = false;
  for (int64_t dim = 0; dim < tensor.dim(); ++dim) {
    const int64_t size = tensor.sizes()[dim];
    const int64_t stride = tensor.strides()[dim];
    if (size < 0 || stride < 0) return false;
    if (size == 0) empty = true;
    int64_t reach = 0;
    if (size > 0 && (__builtin_mul_overflow(size - 1, stride, &reach) || __builtin_add_overflow(last, reach, &last))) {
      return false;
    }
  }
  if (empty) return true;
  int64_t bytes = 0;
  if (__builtin_add_overflow(last, int64_t{1}, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(tensor.element_size()), &bytes)) {
    return false;
  }
  return static_cast<uint64_t>(bytes) <= tensor.storage().nbytes();
}

// Checks the tensors among an object's attributes (objects inside were checked when built).
void check_value(const c10::IValue& value, const std::string& name) {
  if (value.isTensor()) {
    if (!fits_its_storage(value.toTensor())) refuse("attribute '" + name + "' reaches outside its storage");
  } else if (value.isTuple()) {
    for (const c10::IValue& element : value.toTupleRef().elements()) check_value(element, name);
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) check_value(element, name);
  } else if (value.isGenericDict()) {
    for (const auto& item : value.toGenericDict()) check_value(item.value(), name);
  }
}

// LibTorch 1.13's unpickler trusts the pickle's structure: TUPLE3 on a stack of two, or a TUPLE
// without a MARK, corrupts its memory (the checkpoint fuzzer found the first). So a pickle is first
// run here on a stack of kinds, with only the opcodes LibTorch's pickler writes for modules of
// tensors and plain values; every pop must find what the unpickler will assume is there. Values
// nest at most kDeepest deep, and a dictionary or list is never fetched from the memo, so nothing
// can contain itself: whatever walks the result (LibTorch's destructors, check_value) recurses a
// bounded depth.
class PickleCheck {
 public:
  explicit PickleCheck(std::string_view bytes) : bytes_(bytes) {}

  void run() {
    if (take(1) != "\x80" || byte() > 2) fail("it does not start with PROTO 2");
    for (;;) {
      const unsigned char op = byte();
      switch (op) {
        case '.':  // STOP
          if (stack_.size() != 1 || !marks_.empty()) fail("it stops with " + std::to_string(stack_.size()) + " values");
          return;
        case 'c':  // GLOBAL module\nname\n
          line();
          line();
          push(Kind::kGlobal);
          break;
        case 'q':
          put(byte());
          break;
        case 'r':
          put(u32());
          break;
        case 'h':
          get(byte());
          break;
        case 'j':
          get(u32());
          break;
        case '(':
          marks_.push_back(stack_.size());
          break;
        case ')':
          push(Kind::kTuple);
          break;
        case '}':
          push(Kind::kDict);
          break;
        case ']':
          push(Kind::kList);
          break;
        case 'N':
        case 0x88:  // NEWTRUE
        case 0x89:  // NEWFALSE
          push(Kind::kScalar);
          break;
        case 'K':
          take(1);
          push(Kind::kScalar);
          break;
        case 'M':
          take(2);
          push(Kind::kScalar);
          break;
        case 'J':
          take(4);
          push(Kind::kScalar);
          break;
        case 'G':
          take(8);
          push(Kind::kScalar);
          break;
        case 0x8a: {  // LONG1
          const unsigned char n = byte();
          if (n > 8) fail("an integer of " + std::to_string(n) + " bytes");
          take(n);
          push(Kind::kScalar);
          break;
        }
        case 'X':  // BINUNICODE
          take(u32());
          push(Kind::kString);
          break;
        case 't': {
          const std::size_t mark = pop_mark();
          push(Kind::kTuple, pop(stack_.size() - mark) + 1);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
          const int depth = pop(op - 0x84);
          push(Kind::kTuple, depth + 1);
          break;
        }
        case 'u':
        case 'e': {  // SETITEMS, APPENDS
          const std::size_t mark = pop_mark();
          if ((op == 'u' && (stack_.size() - mark) % 2 != 0) || mark == floor() || mark == 0 ||
              stack_[mark - 1].kind != (op == 'u' ? Kind::kDict : Kind::kList)) {
            fail(op == 'u' ? "SETITEMS without a dictionary and pairs" : "APPENDS without a list");
          }
          const int depth = pop(stack_.size() - mark);
          stack_.back().depth = std::max(stack_.back().depth, depth + 1);
          check_depth(stack_.back().depth);
          break;
        }
        case 0x81:  // NEWOBJ: pops the arguments, keeps the class for BUILD
          expect(Kind::kTuple, Kind::kGlobal, "NEWOBJ");
          stack_.pop_back();
          break;
        case 'R':  // REDUCE
          expect(Kind::kTuple, Kind::kGlobal, "REDUCE");
          push(Kind::kOther, pop(2) + 1);
          break;
        case 'b':  // BUILD
          expect(std::nullopt, Kind::kGlobal, "BUILD");
          push(Kind::kOther, pop(2) + 1);
          break;
        case 'Q':  // BINPERSID
          if (stack_.size() == floor() || stack_.back().kind != Kind::kTuple) fail("BINPERSID on the wrong value");
          push(Kind::kOther, pop(1) + 1);
          break;
        default:
          fail("unexpected opcode " + std::to_string(op));
      }
    }
  }

 private:
  enum class Kind { kGlobal, kTuple, kDict, kList, kScalar, kString, kOther };
  struct Value {
    Kind kind;
    int depth;  // 0 for a leaf, 1 + the deepest value inside otherwise
  };
  static constexpr std::size_t kMostValues = 1 << 20;
  static constexpr int kDeepest = 100;

  [[noreturn]] static void fail(const std::string& problem) { refuse("malformed pickle: " + problem); }

  std::string_view take(std::size_t n) {
    if (n > bytes_.size() - at_) fail("it ends inside an opcode");
    const std::string_view taken = bytes_.substr(at_, n);
    at_ += n;
    return taken;
  }
  unsigned char byte() { return static_cast<unsigned char>(take(1)[0]); }
  uint32_t u32() {
    const std::string_view b = take(4);
    uint32_t value = 0;
    for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(b[i]);
    return value;
  }
  void line() {
    const std::size_t end = bytes_.find('\n', at_);
    if (end == std::string_view::npos || end - at_ > 256) fail("a GLOBAL's name is not a line");
    at_ = end + 1;
  }
  // Values below the innermost MARK belong to an enclosing construction.
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t pop_mark() {
    if (marks_.empty()) fail("a MARK is missing");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  void check_depth(int depth) const {
    if (depth > kDeepest) fail("values nest deeper than " + std::to_string(kDeepest));
  }
  void push(Kind kind, int depth = 0) {
    if (stack_.size() >= kMostValues) fail("too many values");
    check_depth(depth);
    stack_.push_back({kind, depth});
  }
  // Pops n values; returns the deepest one's depth.
  int pop(std::size_t n) {
    if (stack_.size() - floor() < n) fail("an opcode takes more values than there are");
    int depth = 0;
    for (std::size_t i = stack_.size() - n; i < stack_.size(); ++i) depth = std::max(depth, stack_[i].depth);
    stack_.resize(stack_.size() - n);
    return depth;
  }
  void expect(std::optional<Kind> top, std::optional<Kind> below, const char* op) {
    if (stack_.size() - floor() < 2 || (top && stack_.back().kind != *top) ||
        (below && stack_[stack_.size() - 2].kind != *below)) {
      fail(std::string(op) + " on the wrong values");
    }
  }
  void put(uint32_t id) {
    if (stack_.size() == floor()) fail("a memo of nothing");
    if (id > memo_.size()) fail("memo " + std::to_string(id) + " skips ahead");
    if (id == memo_.size()) {
      memo_.push_back(stack_.back());
    } else {
      memo_[id] = stack_.back();
    }
  }
  void get(uint32_t id) {
    if (id >= memo_.size()) fail("memo " + std::to_string(id) + " was never stored");
    if (memo_[id].kind == Kind::kDict || memo_[id].kind == Kind::kList) fail("a dictionary or list fetched again");
    push(memo_[id].kind, memo_[id].depth);
  }

  std::string_view bytes_;
  std::size_t at_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value> memo_;
};

// One unpickling of an archive's data.pkl (and constants.pkl) that knows only module classes.
struct Unpickled {
  c10::IValue root;
  c10::IValue root_state;  // the attributes of the last object built: the root's
  int objects = 0;
};

std::string record_text(caffe2::serialize::PyTorchStreamReader& zip, const std::string& name) {
  auto [data, size] = zip.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

Unpickled unpickle(caffe2::serialize::PyTorchStreamReader& zip, const std::string& archive) {
  PickleCheck(record_text(zip, archive + ".pkl")).run();
  const auto unit = std::make_shared<torch::jit::CompilationUnit>();
  std::map<std::string, c10::ClassTypePtr> classes;
  Unpickled result;
  const torch::jit::TypeResolver resolve = [&](const c10::QualifiedName& name) {
    const std::string& text = name.qualifiedName();
    if (!is_module_class(text)) refuse("unexpected class '" + text.substr(0, 80) + "'");
    c10::ClassTypePtr& type = classes[text];
    if (!type) type = c10::ClassType::create(name, unit, /*is_module=*/true);
    return c10::StrongTypePtr(unit, type);
  };
  const torch::jit::ObjLoader build = [&](const c10::StrongTypePtr& of, const c10::IValue& state) {
    if (!state.isGenericDict()) refuse("an object's state is not a dictionary of attributes");
    for (const auto& item : state.toGenericDict()) {
      if (!item.key().isString()) refuse("an attribute name is not a string");
      check_value(item.value(), item.key().toStringRef());
    }
    ++result.objects;
    result.root_state = state;
    return c10::ivalue::Object::create(of, 0);
  };
  result.root = torch::jit::readArchiveAndTensors(archive, "", "", resolve, build, at::Device(at::kCPU), zip,
                                                  refuse_type_annotation);
  return result;
}

// Checks one source file of an archive against the lines LibTorch prints for a module class that
// only declares attributes:
//   class Module(Module):
//     __parameters__ = ["name", ]      __buffers__ = []      __annotations__ = []
//     __annotations__["any/name"] = <type>
//     identifier : <type>
// where <type> is Tensor, int, float, bool, str, NoneType, a module class, or Tuple, List,
// Optional or Dict of types.
class SourceCheck {
 public:
  explicit SourceCheck(std::string_view source) : source_(source) {}

  void run() {
    bool in_class = false;
    while (!source_.empty()) {
      const std::size_t end = source_.find('\n');
      line_ = source_.substr(0, end);
      source_ = end == std::string_view::npos ? std::string_view() : source_.substr(end + 1);
      if (line_.empty()) continue;
      if (take("class Module(Module):")) {
        in_class = true;
      } else if (!in_class || !take("  ")) {
        fail();
      } else if (take("__parameters__ = [") || take("__buffers__ = [")) {
        while (!take("]")) {
          if (!take("\"") || !quoted_name() || !take("\", ")) fail();
        }
      } else if (take("__annotations__")) {
        if (!take(" = []")) {
          if (!take("[\"") || !quoted_name() || !take("\"] = ")) fail();
          type(0);
        }
      } else {
        if (!identifier() || !take(" : ")) fail();
        type(0);
      }
      if (!line_.empty()) fail();
    }
  }

 private:
  static constexpr std::size_t kLongest = 256;
  static constexpr int kDeepest = 8;

  [[noreturn]] void fail() const {
    refuse("its source holds more than attribute declarations (at '" + std::string(line_.substr(0, 40)) + "')");
  }
  bool take(std::string_view text) {
    if (line_.substr(0, text.size()) != text) return false;
    line_.remove_prefix(text.size());
    return true;
  }
  bool quoted_name() {
    std::size_t n = 0;
    while (n < line_.size() && n <= kLongest &&
           (std::isalnum(static_cast<unsigned char>(line_[n])) != 0 || std::strchr("_/.:-", line_[n]) != nullptr)) {
      ++n;
    }
    line_.remove_prefix(n);
    return n > 0 && n <= kLongest;
  }
  bool identifier() {
    std::size_t n = 0;
    while (n < line_.size() && n <= kLongest &&
           (std::isalnum(static_cast<unsigned char>(line_[n])) != 0 || line_[n] == '_')) {
      ++n;
    }
    const bool ok = n > 0 && n <= kLongest && std::isdigit(static_cast<unsigned char>(line_[0])) == 0;
    line_.remove_prefix(n);
    return ok;
  }
  void type(int depth) {
    if (depth > kDeepest) fail();
    for (const std::string_view atom : {"Tensor", "int", "float", "bool", "str", "NoneType"}) {
      if (take(atom) && (line_.empty() || line_[0] == ',' || line_[0] == ']')) return;
    }
    if (take("__torch__.")) {
      if (take("___torch_mangle_")) {
        std::size_t n = 0;
        while (n < line_.size() && n < 12 && std::isdigit(static_cast<unsigned char>(line_[n])) != 0) ++n;
        if (n == 0) fail();
        line_.remove_prefix(n);
        if (!take(".")) fail();
      }
      if (!take("Module")) fail();
      return;
    }
    int arguments = 0;
    if (take("Tuple[")) {
      arguments = -1;
    } else if (take("List[") || take("Optional[")) {
      arguments = 1;
    } else if (take("Dict[")) {
      arguments = 2;
    } else {
      fail();
    }
    for (int count = 1;; ++count) {
      type(depth + 1);
      if (take("]")) {
        if (arguments > 0 && count != arguments) fail();
        return;
      }
      if (!take(", ") || count == arguments) fail();
    }
  }

  std::string_view source_;
  std::string_view line_;
};

// LibTorch's zip reader (miniz) allocates a record's uncompressed size, as the central directory
// states it, before reading a byte of it; miniz bounds that size by the archive only for records
// stored uncompressed with 32-bit sizes. So this walks the central directory as miniz finds it (the
// last end record, its zip64 extension if present) and refuses any record that claims to expand
// beyond the whole archive. LibTorch stores its records uncompressed, so no archive it wrote is
// refused. Bytes miniz itself would reject are refused here too, sooner.
void check_record_sizes(const char* data, std::size_t size) {
  constexpr std::size_t kEndSize = 22, kLocatorSize = 20, kEnd64Size = 56, kEntrySize = 46;
  constexpr uint64_t kSaturated = 0xFFFFFFFF;
  const auto signature = [&](std::size_t at, uint32_t expected) {
    return at + 4 <= size && get_le(data + at, 4) == expected;
  };
  if (size < kEndSize) refuse("not a zip archive (too short)");
  std::size_t end = size - kEndSize + 1;
  do {
    --end;
  } while (end > 0 && !signature(end, 0x06054b50));
  if (!signature(end, 0x06054b50)) refuse("not a zip archive (no end of central directory)");
  uint64_t entries = get_le(data + end + 10, 2);
  uint64_t directory_size = get_le(data + end + 12, 4);
  uint64_t directory = get_le(data + end + 16, 4);
  if (end >= kLocatorSize + kEnd64Size && signature(end - kLocatorSize, 0x07064b50)) {
    const uint64_t end64 = get_le(data + end - kLocatorSize + 8, 8);
    if (end64 > size - kEnd64Size) refuse("zip64 end of central directory lies outside the archive");
    if (signature(end64, 0x06064b50)) {
      entries = get_le(data + end64 + 32, 8);
      directory_size = get_le(data + end64 + 40, 8);
      directory = get_le(data + end64 + 48, 8);
    }
  }
  if (directory > size || directory_size > size - directory) refuse("central directory lies outside the archive");
  const char* entry = data + directory;
  uint64_t left = directory_size;
  for (uint64_t i = 0; i < entries; ++i) {
    if (left < kEntrySize || get_le(entry, 4) != 0x02014b50) refuse("corrupt central directory");
    uint64_t uncompressed = get_le(entry + 24, 4);
    const uint64_t name_size = get_le(entry + 28, 2);
    const uint64_t extra_size = get_le(entry + 30, 2);
    const uint64_t header_size = kEntrySize + name_size + extra_size + get_le(entry + 32, 2);
    if (header_size > left) refuse("corrupt central directory");
    if (uncompressed == kSaturated) {
      // The true size is in the zip64 field, after the name; miniz reads it in this order.
      const char* extra = entry + kEntrySize + name_size;
      for (uint64_t extra_left = extra_size; extra_left >= 4;) {
        const uint64_t field_size = get_le(extra + 2, 2);
        if (field_size + 4 > extra_left) refuse("corrupt zip64 field in the central directory");
        if (get_le(extra, 2) == 1) {
          if (field_size < 8) refuse("corrupt zip64 field in the central directory");
          uncompressed = get_le(extra + 4, 8);
          break;
        }
        extra += field_size + 4;
        extra_left -= field_size + 4;
      }
    }
    if (uncompressed > size) {
      refuse("record " + std::to_string(i) + " claims " + std::to_string(uncompressed) + " bytes, more than the " +
             std::to_string(size) + "-byte archive");
    }
    entry += header_size;
    left -= header_size;
  }
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TensorMap read_tensor_archive(const char* data, std::size_t size) {
  check_record_sizes(data, size);
  caffe2::serialize::PyTorchStreamReader zip(std::make_shared<BytesReader>(data, size));
  const Unpickled unpickled = unpickle(zip, "data");
  if (!unpickled.root.isObject() || unpickled.objects != 1) refuse("its root is not one module of tensors");
  TensorMap tensors;
  for (const auto& item : unpickled.root_state.toGenericDict()) {
    if (item.value().isTensor()) tensors.emplace(item.key().toStringRef(), item.value().toTensor());
  }
  return tensors;
}

void load_checked_archive(torch::serialize::InputArchive& archive, const char* data, std::size_t size,
                          const c10::Device& device) {
  check_record_sizes(data, size);
  caffe2::serialize::PyTorchStreamReader zip(std::make_shared<BytesReader>(data, size));
  if (!unpickle(zip, "data").root.isObject()) refuse("its root is not a module");
  for (const std::string& name : zip.getAllRecords()) {
    if (name == "constants.pkl") {
      unpickle(zip, "constants");
    } else if (name.rfind("code/", 0) == 0 && ends_with(name, ".py")) {
      SourceCheck(record_text(zip, name)).run();
    } else if (name.rfind("code/", 0) == 0 && ends_with(name, ".py.debug_pkl")) {
      // Read only to report a compile error, which checked source cannot cause.
    } else if (name == "byteorder") {
      // LibTorch 2 names the byte order of the tensors' bytes; its reader swaps them if needed.
      const std::string order = record_text(zip, name);
      if (order != "little" && order != "big") refuse("byteorder record is not 'little' or 'big'");
    } else if (name == ".data/serialization_id" || name == ".data/version") {
      // LibTorch 2's id of the archive and its format version: read (and bounded) by the zip reader.
    } else if (name != "data.pkl" && name != "version" && !(name.rfind("data/", 0) == 0 && is_digits(name.substr(5))) &&
               !(name.rfind("constants/", 0) == 0 && is_digits(name.substr(10)))) {
      refuse("unexpected record '" + name.substr(0, 80) + "'");
    }
  }
  archive.load_from(data, size, device);
}

}  // namespace concord::core
