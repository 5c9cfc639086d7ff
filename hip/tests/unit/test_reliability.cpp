// Issue 16: model files that are special files, outputs committed all or none, a thread pool
// that cannot start its threads, the drawn seed. Issue 35: output paths checked in one place,
// stale temporaries, input limits, NUL bytes in JSON, PNG records read without pixels, replay's
// arguments, the stopping signals.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <string>

#include "cli/options.h"
#include "cli/replay.h"
#include "io/files.h"
#include "io/image_files.h"
#include "io/input_text.h"
#include "io/json_text.h"
#include "io/output_files.h"
#include "io/output_paths.h"
#include "io/png_text.h"
#include "io/stale_temporaries.h"
#include "util/interrupt.h"
#include "util/error.h"
#include "util/random_seed.h"
#include "util/thread_pool.h"
#include "test_support.h"

using namespace moss;

namespace {

std::string fresh_dir(const std::string& name) {
  std::string d = testing::TempDir() + "reliability-" + name + "-" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return d;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

}  // namespace

TEST(RegularFiles, FifoIsRefusedWithoutBlocking) {
  const std::string d = fresh_dir("fifo");
  const std::string fifo = d + "/config.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  // Reading a FIFO without a writer would block open() forever: run it on a thread and bound it.
  auto f = std::async(std::launch::async, [&] { return message_of([&] { read_text_file(fifo); }); });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "read_text_file blocked on a FIFO";
  EXPECT_EQ(f.get(), fifo + ": not a regular file (a FIFO)");
  EXPECT_EQ(message_of([&] { require_regular_file(fifo); }), fifo + ": not a regular file (a FIFO)");
}

TEST(RegularFiles, DevicesDirectoriesAndMissingFiles) {
  EXPECT_EQ(message_of([] { read_text_file("/dev/zero"); }), "/dev/zero: not a regular file (a character device)");
  EXPECT_EQ(message_of([] { read_text_file("/"); }), "/: not a regular file (a directory)");
  const std::string d = fresh_dir("missing");
  EXPECT_EQ(message_of([&] { require_regular_file(d + "/nope.json"); }), d + "/nope.json: missing file");
  const std::string link = d + "/zero.json";
  ASSERT_EQ(symlink("/dev/zero", link.c_str()), 0);
  EXPECT_EQ(message_of([&] { require_regular_file(link); }), link + ": not a regular file (a character device)");
}

TEST(OutputFiles, AllOrNone) {
  const std::string d = fresh_dir("outputs");
  {
    OutputFiles out;
    out.add(d + "/a.npy", "latents");
    out.add(d + "/missing/b.png", "image");  // cannot be created: a.npy must not be left either
    EXPECT_NE(message_of([&] { out.commit(); }).find("cannot create a file in " + d + "/missing"), std::string::npos);
  }
  EXPECT_FALSE(exists(d + "/a.npy"));
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + d + "')\"").c_str()), 0) << "a temporary was left in " << d;
  OutputFiles out;
  out.add(d + "/a.npy", "latents");
  out.add(d + "/b.png", "image");
  out.commit();
  EXPECT_EQ(read_text_file(d + "/a.npy"), "latents");
  EXPECT_EQ(read_text_file(d + "/b.png"), "image");
}

TEST(OutputFiles, NamesBeyondTheFileSystemLimitAreRefusedUpFront) {
  const std::string d = fresh_dir("names");
  const std::string long_name = d + "/" + std::string(252, 'a') + ".png";  // 256 bytes
  EXPECT_NE(message_of([&] { check_output_path(long_name, "-o"); }).find("the file name has 256 bytes"),
            std::string::npos);
  check_output_path(d + "/" + std::string(251, 'a') + ".png", "-o");  // 255: fine
}

#if !defined(__SANITIZE_ADDRESS__)
// Issue 16: MOSSINFER_THREADS=100000 under a memory limit deadlocked in the pool's cleanup.
// The child caps its address space (ASan's shadow cannot live under such a cap, hence the
// guard), asks for far more threads than fit, and must get an error, not a hang.
TEST(ThreadPool, ThreadsThatCannotStartAreAnError) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang ends the child by SIGALRM, which the parent reports
    rlimit lim{size_t(1) << 30, size_t(1) << 30};
    setrlimit(RLIMIT_AS, &lim);
    try {
      ThreadPool pool(100000);
      _exit(3);  // every thread started: the limit did not bite
    } catch (const Error& e) {
      const std::string m = e.what();
      _exit(m.find("cannot start host thread") != std::string::npos && m.find("of 100000") != std::string::npos ? 0 : 4);
    }
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
#endif

TEST(ThreadPool, BadThreadCountsAreUsageErrors) {
  for (const char* bad : {"abc", "1e3", "2abc", " 2", "+2", "0", "-1"}) {
    setenv("MOSSINFER_THREADS", bad, 1);
    try {
      host_threads_from_env();
      ADD_FAILURE() << "MOSSINFER_THREADS='" << bad << "' accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Usage) << bad;
      EXPECT_NE(std::string(e.what()).find("MOSSINFER_THREADS='"), std::string::npos);
    }
  }
  setenv("MOSSINFER_THREADS", "100000", 1);
  const HostThreads capped = host_threads_from_env();
  EXPECT_LE(capped.count, int(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_NE(capped.note.find("capped to"), std::string::npos);
  unsetenv("MOSSINFER_THREADS");
  EXPECT_TRUE(host_threads_from_env().note.empty());
}

TEST(RandomSeed, DrawsDiffer) {
  const uint64_t a = draw_random_seed(), b = draw_random_seed(), c = draw_random_seed();
  EXPECT_FALSE(a == b && b == c);  // three equal 32-bit draws: the source is broken
}

// ---- issue 35: output paths, stale temporaries, input limits, NUL in JSON, PNG records, signals

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A pid that named a process a moment ago and names none now.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

void age(const std::string& path, long seconds) {
  const timespec times[2] = {{time(nullptr) - seconds, 0}, {time(nullptr) - seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

}  // namespace

TEST(OutputPaths, NulAnywhereIsRefusedNamingTheSource) {
  const std::string d = fresh_dir("nul");
  write_bytes(d + "/victim.txt", "keep");
  for (const std::string& path : {d + "/victim.txt" + std::string(1, '\0') + ".png",
                                  std::string(1, '\0') + "x.png", d + "/x.png" + std::string(1, '\0')}) {
    const auto [code, msg] = outcome_of([&] { check_output_path(path, "jobs.jsonl:3: output"); });
    EXPECT_EQ(code, 2) << msg;
    EXPECT_EQ(msg.rfind("jobs.jsonl:3: output ", 0), 0u) << msg;
    EXPECT_TRUE(contains(msg, "a NUL byte at byte ")) << msg;
    EXPECT_TRUE(contains(msg, "\\0")) << msg;  // shown as \0, not cutting the message
  }
  EXPECT_EQ(read_text_file(d + "/victim.txt"), "keep");
}

TEST(OutputPaths, SpellingsOfOneFileAreOneFile) {
  const std::string d = fresh_dir("spellings");
  ASSERT_EQ(mkdir((d + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink(d.c_str(), (d + "/link").c_str()), 0);
  const std::vector<std::string> same = {d + "/./x.png", d + "//x.png", d + "/sub/../x.png", d + "/link/x.png",
                                         d + "/./sub/..//./x.png"};
  for (const std::string& other : same) {
    const auto [code, msg] = outcome_of([&] { check_output_paths({{d + "/x.png", "a"}, {other, "b"}}); });
    EXPECT_EQ(code, 2) << other;
    EXPECT_TRUE(contains(msg, "two images would write")) << msg;
    EXPECT_TRUE(contains(msg, ": a and b")) << msg;
  }
  // Whether the file exists or not makes no difference (the folder decides).
  write_bytes(d + "/x.png", "old");
  EXPECT_EQ(outcome_of([&] { check_output_paths({{d + "/x.png", "a"}, {d + "/sub/../x.png", "b"}}); }).first, 2);
  // Different entries are different files, even hard links to one file: each gets its own image.
  ASSERT_EQ(link((d + "/x.png").c_str(), (d + "/hard.png").c_str()), 0);
  EXPECT_EQ(outcome_of([&] {
              check_output_paths({{d + "/x.png", "a"}, {d + "/hard.png", "b"}, {d + "/sub/x.png", "c"},
                                  {d + "/X.png", "d"}});
            }).first,
            -1);
}

TEST(OutputPaths, FoldersThatCannotHoldANewFile) {
  const std::string d = fresh_dir("folders");
  write_bytes(d + "/file", "");
  struct Case {
    std::string path, message;
  };
  const std::vector<Case> cases = {
      {d + "/missing/x.png", "directory " + d + "/missing does not exist"},
      {d + "/file/x.png", d + "/file is not a directory (a regular file)"},
      {"/dev/null/x.png", "/dev/null is not a directory (a character device)"},
      {d, "is a directory"},
      // As root every permission check passes; the probe still finds that /proc takes no files.
      {"/proc/x.png", "/proc"},
      {"/proc/self/x.png", "/proc/self"},
  };
  for (const Case& c : cases) {
    const auto [code, msg] = outcome_of([&] { check_output_path(c.path, "-o"); });
    EXPECT_EQ(code, 2) << c.path << ": " << msg;
    EXPECT_TRUE(contains(msg, c.message)) << msg;
  }
  // The probe leaves nothing behind.
  check_output_path(d + "/ok.png", "-o");
  EXPECT_EQ(list_dir(d), std::vector<std::string>{"file"});
}

TEST(OutputPaths, ADeletedWorkingDirectoryIsFoundUpFront) {
  // In a child: changing the working directory would disturb the other tests.
  const std::string d = fresh_dir("deleted-cwd");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(d.c_str()) != 0 || rmdir(d.c_str()) != 0) _exit(3);
    const auto [code, msg] = outcome_of([] { check_output_path("x.png", "-o"); });
    _exit(code == 2 && contains(msg, "has been deleted") ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(StaleTemporaries, OnlyOursAndOnlyStale) {
  const std::string d = fresh_dir("stale");
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(getpid());
  struct Case {
    std::string name;
    long age;
    bool removed;
  };
  const std::vector<Case> cases = {
      {".moss-infer-" + dead + "-aB3xYz", 120, true},       // writer gone, a minute old
      {".moss-infer-" + dead + "-fresh1", 5, false},        // writer gone, but just written
      {".moss-infer-" + alive + "-aB3xYz", 120, false},     // writer alive: a commit in flight
      {".moss-infer-" + alive + "-oldold", 90000, true},    // a day old: the pid was reused
      {".moss-infer-Q1w2E3", 90000, true},                  // the name before the pid was in it
      {".moss-infer-Q1w2E4", 120, false},                   // ... not yet abandoned
      {".moss-infer-notes.txt", 90000, false},              // not our pattern
      {".moss-infer-" + dead + "-toolong", 90000, false},   // not mkstemp's six characters
      {"x.png", 90000, false},
  };
  for (const Case& c : cases) {
    write_bytes(d + "/" + c.name, "partial");
    age(d + "/" + c.name, c.age);
  }
  const std::string dir_like = d + "/.moss-infer-" + dead + "-dirdir";  // a folder: not ours to remove
  ASSERT_EQ(mkdir(dir_like.c_str(), 0755), 0);
  age(dir_like, 120);
  EXPECT_EQ(remove_stale_temporaries(d), 3);
  for (const Case& c : cases) EXPECT_EQ(exists(d + "/" + c.name), !c.removed) << c.name;
  EXPECT_TRUE(exists(dir_like));
  // check_output_paths sweeps each output folder.
  write_bytes(d + "/.moss-infer-" + dead + "-again1", "partial");
  age(d + "/.moss-infer-" + dead + "-again1", 120);
  check_output_paths({{d + "/y.png", "-o"}});
  EXPECT_FALSE(exists(d + "/.moss-infer-" + dead + "-again1"));
  // And the commit's temporaries carry this process's pid.
  EXPECT_EQ(temporary_template(d), d + "/.moss-infer-" + alive + "-XXXXXX");
}

TEST(InputLimits, FilesBeyondTheLimitAreRefused) {
  const std::string d = fresh_dir("limits");
  write_bytes(d + "/p.txt", std::string(1000, 'a'));
  EXPECT_EQ(read_text_file(d + "/p.txt", 1000).size(), 1000u);
  auto [code, msg] = outcome_of([&] { read_input_text("--prompt-file", d + "/p.txt", 999); });
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(contains(msg, "--prompt-file " + d + "/p.txt: ")) << msg;
  EXPECT_TRUE(contains(msg, "1000 bytes, more than the limit of 999 bytes")) << msg;
  EXPECT_EQ(size_text(kPromptFileLimit), "1 MiB");
  EXPECT_EQ(size_text(kJobsFileLimit), "64 MiB");
}

TEST(JsonText, NulBytesAreNamedByLineAndColumn) {
  refuse_nul_bytes("{\"a\": 1}\n{}", "f.json", 1, ExitCode::Failure);  // none: no error
  const std::string text = std::string("{\n  \"a\": 1,\n  \"b\"") + '\0' + ": 2}";
  auto [code, msg] = outcome_of([&] { refuse_nul_bytes(text, "config.json", 1, ExitCode::Failure); });
  EXPECT_EQ(code, 1);
  EXPECT_EQ(msg, "config.json:3: a NUL byte at column 6 (not valid in JSON)");
  std::tie(code, msg) = outcome_of([&] { refuse_nul_bytes(std::string("{}") + '\0', "jobs.jsonl", 7, ExitCode::Usage); });
  EXPECT_EQ(code, 2);
  EXPECT_EQ(msg, "jobs.jsonl:7: a NUL byte at column 3 (not valid in JSON)");
}

namespace {

uint32_t be32_at(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
         uint32_t(uint8_t(s[at + 3]));
}

// Offset of the first chunk of `type` in a PNG's bytes.
size_t chunk_at(const std::string& png, const std::string& type) {
  for (size_t p = 8; p + 8 <= png.size(); p += 12 + be32_at(png, p))
    if (png.compare(p + 4, 4, type) == 0) return p;
  return std::string::npos;
}

std::string tiny_png(const std::vector<PngText>& text) {
  const uint8_t rgb[2 * 2 * 3] = {};
  return encode_png(rgb, 2, 2, text);
}

}  // namespace

TEST(PngText, RecordsAreReadWithoutThePixels) {
  const std::string d = fresh_dir("pngtext");
  const std::string record = "{\"prompt\": \"caf\xc3\xa9\", \"seed\": 7}";  // UTF-8: an iTXt chunk
  std::string png = tiny_png({{"parameters", "ascii"}, {"generation", record}});
  // A header that claims 20000x20000 (and 1000000x1000000): the pixels are never decoded, so
  // the size costs nothing. The IHDR's CRC no longer matches either; only the record's is checked.
  for (uint32_t side : {20000u, 1000000u}) {
    std::string big = png;
    for (int k = 0; k < 2; ++k)
      for (int b = 0; b < 4; ++b) big[16 + 4 * size_t(k) + size_t(b)] = char((side >> (24 - 8 * b)) & 0xff);
    write_bytes(d + "/big.png", big);
    const PngTextChunk c = read_png_text_chunk(d + "/big.png", "generation", 1 << 20);
    EXPECT_EQ(int(c.status), int(PngTextStatus::Found));
    EXPECT_EQ(c.text, record);
  }
  // tEXt is Latin-1: given back in UTF-8.
  write_bytes(d + "/latin.png", tiny_png({{"generation", "ascii"}}));
  EXPECT_EQ(read_png_text_chunk(d + "/latin.png", "generation", 100).text, "ascii");
  EXPECT_EQ(int(read_png_text_chunk(d + "/latin.png", "parameters", 100).status), int(PngTextStatus::Missing));
  // A damaged record: called damaged, naming the chunk.
  std::string bad = png;
  const size_t at = chunk_at(bad, "iTXt");
  ASSERT_NE(at, std::string::npos);
  bad[at + 8 + be32_at(bad, at) - 2] ^= 0x20;
  write_bytes(d + "/bad.png", bad);
  const PngTextChunk damaged = read_png_text_chunk(d + "/bad.png", "generation", 1 << 20);
  EXPECT_EQ(int(damaged.status), int(PngTextStatus::Damaged));
  EXPECT_TRUE(contains(damaged.detail, "iTXt chunk at byte " + std::to_string(at) + " fails its CRC check"))
      << damaged.detail;
  // A record above the limit, a file cut short, a file that is no PNG: errors naming the file.
  EXPECT_TRUE(contains(outcome_of([&] { read_png_text_chunk(d + "/big.png", "generation", 10); }).second,
                       "more than the 10 read"));
  write_bytes(d + "/cut.png", png.substr(0, at + 4));
  EXPECT_TRUE(contains(outcome_of([&] { read_png_text_chunk(d + "/cut.png", "generation", 1 << 20); }).second,
                       d + "/cut.png: the PNG file is cut short"));
  write_bytes(d + "/no.png", "GIF89a....");
  EXPECT_EQ(outcome_of([&] { read_png_text_chunk(d + "/no.png", "generation", 1 << 20); }).second,
            d + "/no.png: not a PNG file");
}

// The same reader over a PNG's bytes in memory (POST /sdapi/v1/png-info's upload): the same
// answers, and the same errors naming what it was given.
TEST(PngText, BytesInMemoryReadAsFiles) {
  const std::string record = "{\"prompt\": \"caf\xc3\xa9\", \"seed\": 7}";
  const std::string png = tiny_png({{"parameters", "ascii"}, {"generation", record}});
  EXPECT_EQ(png_text_chunk(png, "image", "generation", 1 << 20).text, record);
  EXPECT_EQ(png_text_chunk(png, "image", "parameters", 1 << 20).text, "ascii");
  EXPECT_EQ(int(png_text_chunk(png, "image", "other", 1 << 20).status), int(PngTextStatus::Missing));
  const size_t at = chunk_at(png, "iTXt");  // the record: a cut before its end is an error
  ASSERT_NE(at, std::string::npos);
  for (size_t cut : {size_t(4), size_t(20), at + 4, at + 12})
    EXPECT_TRUE(contains(outcome_of([&] { png_text_chunk(png.substr(0, cut), "image", "generation", 1 << 20); }).second,
                         "image: ")) << cut;
  EXPECT_EQ(outcome_of([&] { png_text_chunk("GIF89a....", "image", "generation", 1 << 20); }).second,
            "image: not a PNG file");
  EXPECT_TRUE(contains(outcome_of([&] { png_text_chunk(png, "image", "generation", 10); }).second, "more than the 10"));
}

TEST(Replay, OptionValuesAreNeverReadAsOptions) {
  const std::string d = fresh_dir("replay");
  write_bytes(d + "/rec.png", tiny_png({{"generation", "{\"prompt\": \"p\", \"seed\": 7, \"steps\": 3}"}}));
  const ParsedArgs a =
      parse_args({"--model", "m", "--from-png", d + "/rec.png", "--negative", "--seed", "--prompt=--steps", "-o", "x.png"});
  // The record's seed and steps stay: "--seed" and "--steps" were values, not options.
  EXPECT_EQ(a.run.seed, 7u);
  EXPECT_EQ(a.run.steps, 3);
  EXPECT_EQ(a.run.negative, "--seed");
  EXPECT_EQ(a.run.prompt, "--steps");
  EXPECT_EQ(a.replay.fields, (std::vector<RequestField>{RequestField::Steps, RequestField::Seed}));
  // --from-png as an option's value is a value.
  const ParsedArgs plain = parse_args({"--model", "m", "--prompt", "--from-png", "--negative", "x", "-o", "x.png"});
  EXPECT_EQ(plain.run.prompt, "--from-png");
  EXPECT_TRUE(plain.replay.flag.empty());
}

TEST(Replay, ARecordsBadValueIsBlamedOnTheRecord) {
  const std::string d = fresh_dir("replay-blame");
  write_bytes(d + "/rec.png", tiny_png({{"generation", "{\"prompt\": \"p\", \"steps\": 0}"}}));
  const auto [code, msg] = outcome_of([&] { parse_args({"--model", "m", "--from-png", d + "/rec.png", "-o", "x.png"}); });
  ASSERT_EQ(code, 2);
  EXPECT_EQ(msg, "--from-png " + d + "/rec.png: the record's steps '0': must be between 1 and 1000");
  // What the engine refuses later is blamed on the record's field too; a flag the user typed
  // keeps its own name.
  write_bytes(d + "/ok.png", tiny_png({{"generation", "{\"prompt\": \"p\", \"skip_layers\": [9]}"}}));
  const ParsedArgs a = parse_args({"--model", "m", "--from-png", d + "/ok.png", "-o", "x.png"});
  EXPECT_EQ(std::string(a.replay.blame(usage_error("--skip-layers 9: block 9 is beyond")).what()),
            "--from-png " + d + "/ok.png: the record's skip_layers 9: block 9 is beyond");
  EXPECT_EQ(std::string(a.replay.blame(usage_error("--cfg '500': must be between 0 and 100")).what()),
            "--cfg '500': must be between 0 and 100");
}

TEST(Signals, EveryStoppingSignalIsNamed) {
  for (const auto& [sig, name] : std::vector<std::pair<int, std::string>>{
           {SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGPIPE, "SIGPIPE"}, {SIGQUIT, "SIGQUIT"},
           {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"},
           {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}})
    EXPECT_EQ(signal_name(sig), name);
}
