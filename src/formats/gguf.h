#pragma once
// GGUF (v2, v3) reader on a memory map and a streaming writer. Every offset, count and
// length in a file is checked against its size before use, so a truncated or hostile
// file gives a tps::Error naming what was wrong, never a crash.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "quant/ggml_type.h"

namespace tps {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType array_type = GgufType::kU8;  // element type when type == kArray
  // Scalars: integers in `integer`, floats in `real`, strings in `str`, bools in `integer`.
  int64_t integer = 0;
  double real = 0.0;
  std::string str;
  // Arrays: string elements in `strings`, numeric (and bool) elements in `numbers`;
  // arrays of arrays keep only their length.
  std::vector<std::string> strings;
  std::vector<double> numbers;
  uint64_t array_length = 0;

  bool is_integer() const;
  bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> dims;  // dims[0] is the row length (contiguous), as in ggml
  uint64_t offset = 0;        // from the start of the data section
  size_t nbytes = 0;
  const uint8_t* data = nullptr;

  int64_t n_elements() const;
  int64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
  int64_t n_rows() const { return n_elements() / row_length(); }
};

class GgufFile {
 public:
  // Maps and parses a file. Throws tps::Error on any problem.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller (for tests and fuzzing); `name` is used in errors.
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size, const std::string& name);

  uint32_t version() const { return version_; }
  const std::string& path() const { return name_; }
  size_t file_size() const { return size_; }
  size_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: the default when the key is absent; an error when it has the wrong type.
  std::string get_string(const std::string& key, const std::string& fallback = "") const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;  // accepts integers too
  bool get_bool(const std::string& key, bool fallback) const;
  // Required typed getters: an error naming the key when absent.
  std::string require_string(const std::string& key) const;
  int64_t require_int(const std::string& key) const;
  // Array getters: nullptr when absent; an error when present with another element type.
  const std::vector<std::string>* get_string_array(const std::string& key) const;
  const std::vector<double>* get_number_array(const std::string& key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;
  size_t tensor_data_bytes() const;  // sum of all tensors' bytes

 private:
  GgufFile() = default;
  void parse_all();

  std::unique_ptr<MappedFile> file_;
  std::string name_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Writes a GGUF v3 file. Metadata is kept in insertion order; tensor data is produced
// one tensor at a time by a fill callback, so multi-GB files need little memory.
class GgufWriter {
 public:
  using Fill = std::function<void(std::span<uint8_t> dst)>;

  void set_string(const std::string& key, const std::string& v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // Copies every key of a reader (e.g. to carry a vocabulary over), except those that
  // start with one of skip_prefixes.
  void copy_metadata(const GgufFile& from, const std::vector<std::string>& skip_prefixes = {});

  // dims[0] is the row length; it must be a multiple of the type's block size.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims, Fill fill);
  void write(const std::string& path) const;  // throws tps::Error on I/O failure

 private:
  struct Kv {
    std::string key;
    std::vector<uint8_t> encoded;  // type id + value, already serialized
  };
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    size_t nbytes;
    Fill fill;
  };
  void put(const std::string& key, std::vector<uint8_t> encoded);

  std::vector<Kv> kvs_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tps
