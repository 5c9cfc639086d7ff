// Issue 16: model files that are special files, outputs committed all or none, a thread pool
// that cannot start its threads, the drawn seed.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include "io/files.h"
#include "io/output_files.h"
#include "util/error.h"
#include "util/random_seed.h"
#include "util/thread_pool.h"

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
  EXPECT_NE(message_of([&] { check_writable_output(long_name, "-o"); }).find("the file name has 256 bytes"),
            std::string::npos);
  check_writable_output(d + "/" + std::string(251, 'a') + ".png", "-o");  // 255: fine
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
