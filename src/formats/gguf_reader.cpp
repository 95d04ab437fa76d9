#include <cstring>
#include <limits>

#include "core/error.h"
#include "formats/gguf.h"

namespace tps {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;

// A bounds-checked cursor over the file's bytes.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    uint64_t len = read<uint64_t>(what);
    if (len > remaining()) fail("{}: {} has length {} but only {} bytes remain (truncated or corrupt file)", name_, what, len, remaining());
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }

  void need(uint64_t n, const char* what) const {
    if (n > remaining()) fail("{}: truncated file: {} needs {} bytes at offset {} but the file has {}", name_, what, n, pos_, size_);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  const std::string& name_;
  size_t pos_ = 0;
};

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

// Reads one scalar of type t into integer/real fields.
void read_scalar(Cursor& c, GgufType t, int64_t& integer, double& real) {
  switch (t) {
    case GgufType::kU8: integer = c.read<uint8_t>("u8 value"); break;
    case GgufType::kI8: integer = c.read<int8_t>("i8 value"); break;
    case GgufType::kU16: integer = c.read<uint16_t>("u16 value"); break;
    case GgufType::kI16: integer = c.read<int16_t>("i16 value"); break;
    case GgufType::kU32: integer = c.read<uint32_t>("u32 value"); break;
    case GgufType::kI32: integer = c.read<int32_t>("i32 value"); break;
    case GgufType::kBool: integer = c.read<uint8_t>("bool value") != 0; break;
    case GgufType::kU64: integer = static_cast<int64_t>(c.read<uint64_t>("u64 value")); break;
    case GgufType::kI64: integer = c.read<int64_t>("i64 value"); break;
    case GgufType::kF32: real = c.read<float>("f32 value"); break;
    case GgufType::kF64: real = c.read<double>("f64 value"); break;
    default: break;
  }
  if (t != GgufType::kF32 && t != GgufType::kF64) real = static_cast<double>(integer);
}

void read_value(Cursor& c, GgufType t, GgufValue& v, const std::string& key, const std::string& file, int depth);

void read_array(Cursor& c, GgufValue& v, const std::string& key, const std::string& file, int depth) {
  uint32_t et = c.read<uint32_t>("array element type");
  if (!valid_type(et)) fail("{}: metadata key '{}' is an array of unknown type {}", file, key, et);
  v.array_type = static_cast<GgufType>(et);
  uint64_t n = c.read<uint64_t>("array length");
  v.array_length = n;
  if (v.array_type == GgufType::kString) {
    // Each string needs at least its 8-byte length.
    if (n > c.remaining() / 8) fail("{}: metadata key '{}' claims {} strings, more than the file can hold", file, key, n);
    v.strings.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.strings.push_back(c.read_string("array string"));
  } else if (v.array_type == GgufType::kArray) {
    if (depth > 2) fail("{}: metadata key '{}' nests arrays too deeply", file, key);
    if (n > c.remaining() / 12) fail("{}: metadata key '{}' claims {} arrays, more than the file can hold", file, key, n);
    for (uint64_t i = 0; i < n; ++i) {
      GgufValue inner;
      inner.type = GgufType::kArray;
      read_array(c, inner, key, file, depth + 1);
    }
  } else {
    size_t es = scalar_size(v.array_type);
    if (n > c.remaining() / es) fail("{}: metadata key '{}' claims {} elements, more than the file can hold", file, key, n);
    v.numbers.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      int64_t integer = 0;
      read_scalar(c, v.array_type, integer, v.numbers[i]);
    }
  }
}

void read_value(Cursor& c, GgufType t, GgufValue& v, const std::string& key, const std::string& file, int depth) {
  v.type = t;
  if (t == GgufType::kString) {
    v.str = c.read_string("string value");
  } else if (t == GgufType::kArray) {
    read_array(c, v, key, file, depth);
  } else {
    read_scalar(c, t, v.integer, v.real);
  }
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
    case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64: return true;
    default: return false;
  }
}

int64_t GgufTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  file->file_ = std::make_unique<MappedFile>(path);
  file->name_ = path;
  file->data_ = file->file_->data();
  file->size_ = file->file_->size();
  file->parse_all();
  return file;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  file->name_ = name;
  file->data_ = data;
  file->size_ = size;
  file->parse_all();
  return file;
}

void GgufFile::parse_all() {
  Cursor c(data_, size_, name_);
  if (size_ < 4) fail("{}: not a GGUF file (only {} bytes)", name_, size_);
  if (c.read<uint32_t>("magic") != kGgufMagic) fail("{}: not a GGUF file (bad magic)", name_);
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) fail("{}: unsupported GGUF version {} (expected 2 or 3)", name_, version_);
  uint64_t n_tensors = c.read<uint64_t>("tensor count");
  uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Each key-value needs at least 12 bytes, each tensor info at least 24.
  if (n_kv > c.remaining() / 12) fail("{}: metadata count {} is more than the file can hold", name_, n_kv);
  if (n_tensors > c.remaining() / 24) fail("{}: tensor count {} is more than the file can hold", name_, n_tensors);

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key");
    uint32_t t = c.read<uint32_t>("metadata value type");
    if (!valid_type(t)) fail("{}: metadata key '{}' has unknown value type {}", name_, key, t);
    GgufValue v;
    read_value(c, static_cast<GgufType>(t), v, key, name_, 0);
    metadata_[key] = std::move(v);
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (!a->is_integer() || a->integer <= 0 || a->integer > (1 << 20) || (a->integer & (a->integer - 1)) != 0)
      fail("{}: general.alignment must be a power of two, got {}", name_, a->integer);
    alignment_ = static_cast<size_t>(a->integer);
  }

  tensors_.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor& t = tensors_[i];
    t.name = c.read_string("tensor name");
    uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) fail("{}: tensor '{}' has {} dimensions (expected 1 to {})", name_, t.name, n_dims, kMaxDims);
    int64_t n_el = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = c.read<uint64_t>("tensor dimension");
      if (dim == 0 || dim > (uint64_t{1} << 40)) fail("{}: tensor '{}' has an invalid dimension {}", name_, t.name, dim);
      if (n_el > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim)) fail("{}: tensor '{}' is impossibly large", name_, t.name);
      n_el *= static_cast<int64_t>(dim);
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type = c.read<uint32_t>("tensor type");
    auto info = ggml_type_info(type);
    if (!info) fail("{}: tensor '{}' has unknown type id {}", name_, t.name, type);
    t.type = static_cast<GgmlType>(type);
    if (t.dims[0] % info->block_size != 0)
      fail("{}: tensor '{}' of type {} has row length {}, not a multiple of its block size {}", name_, t.name, info->name, t.dims[0], info->block_size);
    t.offset = c.read<uint64_t>("tensor offset");
    t.nbytes = static_cast<size_t>(n_el / info->block_size) * info->block_bytes;
    if (!tensor_index_.emplace(t.name, i).second) fail("{}: duplicate tensor name '{}'", name_, t.name);
  }

  size_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_start > size_) fail("{}: truncated file: tensor data section missing", name_);
  size_t data_size = size_ - std::min(data_start, size_);
  for (auto& t : tensors_) {
    if (t.offset % alignment_ != 0) fail("{}: tensor '{}' offset {} is not aligned to {}", name_, t.name, t.offset, alignment_);
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      fail("{}: truncated file: tensor '{}' needs bytes {}..{} of a data section of {}", name_, t.name, t.offset, t.offset + t.nbytes, data_size);
    t.data = data_ + data_start + t.offset;
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufType::kString) fail("{}: metadata key '{}' should be a string, is {}", name_, key, gguf_type_name(v->type));
  return v->str;
}

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (!v->is_integer()) fail("{}: metadata key '{}' should be an integer, is {}", name_, key, gguf_type_name(v->type));
  return v->integer;
}

double GgufFile::get_float(const std::string& key, double fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (!v->is_float() && !v->is_integer()) fail("{}: metadata key '{}' should be a number, is {}", name_, key, gguf_type_name(v->type));
  return v->real;
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufType::kBool) fail("{}: metadata key '{}' should be a bool, is {}", name_, key, gguf_type_name(v->type));
  return v->integer != 0;
}

std::string GgufFile::require_string(const std::string& key) const {
  if (!has(key)) fail("{}: required metadata key '{}' is missing", name_, key);
  return get_string(key);
}

int64_t GgufFile::require_int(const std::string& key) const {
  if (!has(key)) fail("{}: required metadata key '{}' is missing", name_, key);
  return get_int(key, 0);
}

const std::vector<std::string>* GgufFile::get_string_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString)
    fail("{}: metadata key '{}' should be an array of strings", name_, key);
  return &v->strings;
}

const std::vector<double>* GgufFile::get_number_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->type != GgufType::kArray || v->array_type == GgufType::kString || v->array_type == GgufType::kArray)
    fail("{}: metadata key '{}' should be an array of numbers", name_, key);
  return &v->numbers;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

size_t GgufFile::tensor_data_bytes() const {
  size_t total = 0;
  for (const auto& t : tensors_) total += t.nbytes;
  return total;
}

}  // namespace tps
