// The compiled-code cache: private directory, content-hash keys, verified loads, atomic builds.
#include "retorch/compiler/CodeCache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/core/Error.h"

extern char** environ;

namespace retorch::compiler {

// Note [Code cache]
// Objects live in <cache>/compiler/<key>.so next to <key>.cpp (the source) and <key>.sha256 (the
// object's digest), where key = sha256(source, compiler identity, flags). A load trusts nothing
// on disk: the recorded source must equal the source being built and the object's bytes must
// hash to the recorded digest, else the object is rebuilt. The directory must be owned by this
// user and closed to others (created 0700; a group/world-accessible one of ours is tightened,
// anybody else's is refused). Builds write temporary names and rename them into place, so a
// concurrent process never loads a half-written object.

namespace {

std::string read_file(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  *ok = bool(f);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  RT_CHECK(bool(f), "compile: cannot write ", path);
  f << bytes;
  RT_CHECK(bool(f), "compile: cannot write ", path);
}

void make_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    RT_ERROR("compile: cannot create the cache directory ", dir);
  struct stat st {};
  RT_CHECK(::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode),
           "compile: the cache path ", dir, " is not a directory");
  RT_CHECK(st.st_uid == ::geteuid(), "compile: the cache directory ", dir,
           " belongs to another user; set RETORCH_CACHE_DIR to a private directory");
  if ((st.st_mode & 077) != 0) ::chmod(dir.c_str(), 0700);
}

// Runs argv (no shell), its output to `log`; returns the exit status.
int run_command(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// -fno-math-errno and -fno-trapping-math let GCC inline floor and if-convert the NaN and range
// selects of the prelude's math, without which no loop calling it vectorizes (results are the
// same; only errno and floating-point exception flags are not kept). GCC vectorizes 256 bits at
// a time even where the CPU has AVX-512; 512 doubles the arithmetic of math-bound loops (the
// tanh chain 0.44 -> 0.36 ms before Note [Rational tanh]) and follows cpu_isa(), so the flags
// (and the cache key) change with RETORCH_CPU_ISA.
std::vector<std::string> compile_flags() {
  std::vector<std::string> f = {"-O3", "-march=native", "-fopenmp", "-fno-math-errno",
                                "-fno-trapping-math", "-fPIC", "-shared", "-std=c++17",
                                "-Wl,--no-undefined"};
  if (cpu::cpu_isa() == cpu::CpuIsa::kAvx512)
    f.insert(f.begin() + 2, "-mprefer-vector-width=512");
  return f;
}

// The compiler's identity for the key: its --version banner, and the CPU's feature flags (the
// objects are built with -march=native: a cache shared with another machine must not hand it
// an object using instructions it lacks).
const std::string& compiler_identity() {
  static const std::string id = [] {
    std::string cpu;
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("flags", 0) == 0) {
        cpu = line;
        break;
      }
    std::string log = cache_dir() + "/compiler/.version." + std::to_string(::getpid());
    run_command({compiler_command(), "--version"}, log);
    bool ok = false;
    std::string v = read_file(log, &ok);
    ::unlink(log.c_str());
    return v + cpu;
  }();
  return id;
}

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

Library::~Library() {
  if (handle_) ::dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* p = ::dlsym(handle_, name.c_str());
  RT_CHECK(p != nullptr, "compile: ", path_, " has no symbol ", name);
  return p;
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  RT_CHECK(EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) == 1,
           "compile: sha256 failed");
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < n; ++i) {
    s += kHex[md[i] >> 4];
    s += kHex[md[i] & 15];
  }
  return s;
}

std::string cache_dir() {
  std::string base;
  if (const char* e = std::getenv("RETORCH_CACHE_DIR"); e && *e) {
    base = e;
  } else {
    std::string parent;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) parent = x;
    else if (const char* h = std::getenv("HOME"); h && *h) parent = std::string(h) + "/.cache";
    else parent = "/tmp";
    ::mkdir(parent.c_str(), 0700);
    base = parent + "/retorch";
  }
  make_private_dir(base);
  make_private_dir(base + "/compiler");
  return base;
}

std::string compiler_command() {
  const char* e = std::getenv("RETORCH_CXX");
  return e && *e ? e : "c++";
}

std::shared_ptr<Library> build_or_load(const std::string& source, BuildInfo* info) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  static std::unordered_map<std::string, std::weak_ptr<Library>> loaded;
  const std::string dir = cache_dir() + "/compiler";
  std::string flags;
  for (const std::string& f : compile_flags()) flags += f + " ";
  const std::string key =
      sha256_hex(source + '\0' + compiler_command() + '\0' + compiler_identity() + '\0' + flags);
  const std::string stem = dir + "/" + key;
  BuildInfo bi;
  bi.key = key;
  bi.object = stem + ".so";
  if (auto it = loaded.find(key); it != loaded.end())
    if (auto lib = it->second.lock()) {
      bi.cache_hit = true;
      if (info) *info = bi;
      return lib;
    }
  bool have_src = false, have_obj = false, have_sum = false;
  std::string cached_src = read_file(stem + ".cpp", &have_src);
  std::string obj = read_file(stem + ".so", &have_obj);
  std::string sum = read_file(stem + ".sha256", &have_sum);
  if (have_obj) {
    if (have_src && have_sum && cached_src == source && sum == sha256_hex(obj))
      bi.cache_hit = true;
    else
      bi.rebuilt = true;  // Note [Code cache]: never trusted
  }
  if (!bi.cache_hit) {
    const std::string tmp = stem + ".tmp" + std::to_string(::getpid());
    write_file(tmp + ".cpp", source);
    std::vector<std::string> argv = {compiler_command()};
    for (const std::string& f : compile_flags()) argv.push_back(f);
    argv.insert(argv.end(), {tmp + ".cpp", "-o", tmp + ".so", "-lmvec"});
    int rc = run_command(argv, tmp + ".log");
    bool ok = false;
    std::string log = read_file(tmp + ".log", &ok);
    ::unlink((tmp + ".log").c_str());
    if (rc != 0) {
      ::unlink((tmp + ".cpp").c_str());
      ::unlink((tmp + ".so").c_str());
      RT_ERROR("compile: building the generated kernels failed (", compiler_command(),
               " exit ", rc, "):\n", log.substr(0, 4000));
    }
    std::string built = read_file(tmp + ".so", &ok);
    RT_CHECK(ok, "compile: the compiler wrote no object");
    write_file(tmp + ".sha256", sha256_hex(built));
    RT_CHECK(::rename((tmp + ".so").c_str(), (stem + ".so").c_str()) == 0 &&
                 ::rename((tmp + ".cpp").c_str(), (stem + ".cpp").c_str()) == 0 &&
                 ::rename((tmp + ".sha256").c_str(), (stem + ".sha256").c_str()) == 0,
             "compile: cannot move the built object into ", dir);
  }
  void* h = ::dlopen(bi.object.c_str(), RTLD_NOW | RTLD_LOCAL);
  RT_CHECK(h != nullptr, "compile: dlopen ", bi.object, ": ", ::dlerror());
  auto lib = std::make_shared<Library>(h, bi.object);
  loaded[key] = lib;
  if (info) *info = bi;
  return lib;
}

std::string cached_build(const std::string& source, const std::string& identity,
                         const std::string& ext, const std::function<std::string()>& build,
                         bool* cache_hit) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  const std::string stem =
      cache_dir() + "/compiler/" + sha256_hex(source + '\0' + identity) + "." + ext;
  bool have_src = false, have_out = false, have_sum = false;
  const std::string cached_src = read_file(stem + ".src", &have_src);
  std::string out = read_file(stem, &have_out);
  const std::string sum = read_file(stem + ".sha256", &have_sum);
  const bool hit = have_src && have_out && have_sum && cached_src == source &&
                   sum == sha256_hex(out);
  if (cache_hit) *cache_hit = hit;
  if (hit) return out;
  out = build();
  const std::string tmp = stem + ".tmp" + std::to_string(::getpid());
  write_file(tmp, out);
  write_file(tmp + ".src", source);
  write_file(tmp + ".sha256", sha256_hex(out));
  RT_CHECK(::rename(tmp.c_str(), stem.c_str()) == 0 &&
               ::rename((tmp + ".src").c_str(), (stem + ".src").c_str()) == 0 &&
               ::rename((tmp + ".sha256").c_str(), (stem + ".sha256").c_str()) == 0,
           "compile: cannot move the built ", ext, " into ", cache_dir(), "/compiler");
  return out;
}

}  // namespace retorch::compiler
